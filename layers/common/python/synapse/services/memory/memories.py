"""The structured memory model: upsert by (category, key), source/verified/confidence rules, reads."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from synapse.core.errors import NotFound, ValidationFailed
from synapse.core.models.base import (
    PRIORITY_RANK,
    WITHIN_PATTERN,
    Category,
    Change,
    Source,
    check_tag,
    utcnow,
)
from synapse.core.models.memory import Memory, MemoryHistory, MemoryIn, MemoryPatch, RestoreIn, ScoredMemory
from synapse.core.principal import Principal
from synapse.services.memory import writers
from synapse.services.memory.identity import IDENTITY_CATEGORIES, rebuild_identity
from synapse.store import codec, db, nuggets
from synapse.store.keys import Space
from synapse.store.minds import Mind

_WINDOW = re.compile(WITHIN_PATTERN)
_UNITS = {"m": "minutes", "h": "hours", "d": "days"}


def embed_document(user_id: str, text: str) -> codec.Vector | None:
    """The stored vector of a memory's content (its key and tags are for full-text search), or None
    when no embedder is configured."""
    from synapse.ai.embeddings import get_embedder  # lazy: keeps google.genai out of cold starts
    from synapse.services.account.providers import gemini_key_for

    embedder = get_embedder(gemini_key_for(user_id))
    if embedder is None:
        return None
    vec = embedder.embed_documents([text])[0]
    return codec.make_vector(vec, embedder.model)


Make = Callable[[nuggets.Stored | None], Memory]
Kind = Callable[[nuggets.Stored | None], Change]


def _created_or_updated(read: nuggets.Stored | None) -> Change:
    return Change.updated if read is not None else Change.created


def write(
    space: Space,
    mem_id: str,
    make: Make,
    *,
    vector: codec.Vector | None = None,
    read: nuggets.Stored | None = None,
    known: bool = False,
    kind: Kind = _created_or_updated,
) -> tuple[Memory, bool]:
    """The one way a memory is written: read it, `make` the memory as it is to be from what was read
    (None: it does not exist yet; `make` raises NotFound where it must exist), store it conditionally
    on that read, and read again if another writer came in between. Returns (memory, created).

    `read` (with `known`) is a read the caller already made. The identity line follows identity and
    preference memories."""
    for attempt in range(nuggets.WRITE_ATTEMPTS):
        if not known:
            read = nuggets.get(space, mem_id)
        known = False
        memory = make(read).model_copy(
            update={"version": nuggets.next_version(read), "mind_id": space.mind_id}
        )
        try:
            nuggets.save(space, [nuggets.Write(memory=memory, read=read, vector=vector, kind=kind(read))])
        except nuggets.LostRace:
            db.backoff(attempt)
            continue
        if memory.category in IDENTITY_CATEGORIES:
            rebuild_identity(space)
        return memory, read is None
    raise db.busy()


def put(who: Principal, mind: Mind, body: MemoryIn) -> tuple[Memory, bool]:
    """POST /memory: create, or update the memory with the same key. Returns (memory, created).

    Content, source, verified and confidence are always written; tags, priority and expires_at only
    when sent (an update keeps the old ones); created_at is kept."""
    user_id = who.check_user_id(body.userId)
    space = mind.space
    sent = body.model_fields_set
    vector = embed_document(user_id, body.content)

    def make(read: nuggets.Stored | None) -> Memory:
        now = utcnow()
        changes: dict[str, Any] = {
            "content": body.content,
            **writers.of(who).stamp(body.confidence),
            "updated_at": now,
            **{name: getattr(body, name) for name in ("tags", "priority", "expires_at") if name in sent},
        }
        if read is not None:
            return read.memory.model_copy(update=changes)
        return Memory(
            id=mem_id,
            category=body.category,
            key=body.key,
            user_id=user_id,
            created_at=now,
            **{"tags": [], "priority": body.priority, **changes},
        )

    mem_id = nuggets.id_for(space, body.category, body.key)
    return write(space, mem_id, make, vector=vector)


def get(mind: Mind, mem_id: str) -> Memory:
    found = nuggets.get(mind.space, mem_id)
    if found is None or not found.memory.is_live(utcnow()):
        raise NotFound(nuggets.NO_MEMORY)
    return found.memory


def _existing(read: nuggets.Stored | None) -> nuggets.Stored:
    if read is None:
        raise NotFound(nuggets.NO_MEMORY)
    return read


def update(who: Principal, mind: Mind, mem_id: str, patch: MemoryPatch) -> Memory:
    """PUT /memory/{id}: content, tags, priority, confidence, expires_at; never category or key.

    Source, verified and confidence describe the last writer (a PUT without confidence sets the
    caller's default)."""
    who.check_user_id(patch.userId)
    space = mind.space
    sent = patch.model_fields_set
    # read first: a 404 or a changed identity is answered before any work (embedding new content
    # costs a model call, wasted on a memory that does not exist)
    current = _existing(nuggets.get(space, mem_id))
    for name in ("category", "key"):
        if name in sent and getattr(patch, name) != getattr(current.memory, name):
            raise ValidationFailed.at(["body", name], "is part of the memory's identity and cannot change")
    changes: dict[str, Any] = writers.of(who).stamp(patch.confidence)
    for name in ("content", "tags", "priority", "expires_at"):
        if name in sent:
            value = getattr(patch, name)
            if value is None and name != "expires_at":
                raise ValidationFailed.at(["body", name], "cannot be null")
            changes[name] = value
    vector = embed_document(who.user_id, patch.content) if patch.content is not None else None

    def make(read: nuggets.Stored | None) -> Memory:
        return _existing(read).memory.model_copy(update={**changes, "updated_at": utcnow()})

    return write(space, mem_id, make, vector=vector, read=current, known=True)[0]


def delete(mind: Mind, mem_id: str) -> None:
    space = mind.space
    if nuggets.delete(space, mem_id) in IDENTITY_CATEGORIES:
        rebuild_identity(space)


def verify(who: Principal, mind: Mind, mem_id: str) -> Memory:
    who.require_user()
    space = mind.space

    def make(read: nuggets.Stored | None) -> Memory:
        now = utcnow()
        if read is None or not read.memory.is_live(now):  # 404 for a missing or expired memory
            raise NotFound(nuggets.NO_MEMORY)
        return read.memory.model_copy(update={"verified": True, "updated_at": now})

    return write(space, mem_id, make, kind=lambda _: Change.verified)[0]


def history(mind: Mind, mem_id: str) -> MemoryHistory:
    """GET /memory/{id}/history: the current version first, then the kept ones down to the oldest."""
    current = nuggets.get(mind.space, mem_id)
    if current is None or not current.memory.is_live(utcnow()):
        raise NotFound(nuggets.NO_MEMORY)
    return MemoryHistory(versions=[nuggets.as_version(current), *nuggets.history(mind.space, mem_id)])


def restore(who: Principal, mind: Mind, mem_id: str, body: RestoreIn) -> Memory:
    """POST /memory/{id}/restore: a version's content, tags, priority, confidence and expiry, as a new
    version written by the caller (source and verified follow the caller, as for any write)."""
    space = mind.space
    current = _existing(nuggets.get(space, mem_id))
    wanted = (
        nuggets.as_version(current)
        if body.version == current.memory.version
        else nuggets.kept_version(space, mem_id, body.version)
    )
    if wanted is None:
        raise NotFound("No such version of that memory.")
    vector = embed_document(who.user_id, wanted.content) if wanted.content != current.memory.content else None

    def make(read: nuggets.Stored | None) -> Memory:
        return _existing(read).memory.model_copy(
            update={
                "content": wanted.content,
                "tags": wanted.tags,
                "priority": wanted.priority,
                "expires_at": wanted.expires_at,
                **writers.of(who).stamp(wanted.confidence),
                "updated_at": utcnow(),
            }
        )

    return write(
        space, mem_id, make, vector=vector, read=current, known=True, kind=lambda _: Change.restored
    )[0]


def list_page(
    mind: Mind,
    *,
    category: Category | None,
    tag: str | None,
    source: Source | None,
    verified: bool | None,
    limit: int,
    cursor: str | None,
) -> tuple[list[Memory], str | None]:
    flt = nuggets.MemoryFilter(
        category=category,
        tag=_tag(tag),
        source=source,
        verified=verified,
        live_at=utcnow(),
    )
    try:
        return nuggets.query(mind.space, flt, limit=limit, cursor=cursor)
    except codec.BadCursor as exc:
        raise bad_cursor() from exc


def bad_cursor() -> ValidationFailed:
    return ValidationFailed.at(["query", "cursor"], "not one this API returned")


def _tag(tag: str | None) -> str | None:
    """A `?tag=` as stored tags are: normalised (models.normalize_tag); empty after that is a 422."""
    if tag is None:
        return None
    try:
        return check_tag(tag)
    except ValueError as exc:
        raise ValidationFailed.at(["query", "tag"], str(exc)) from exc


Rank = tuple[int, int, str, str]


def _rank(m: Memory) -> Rank:
    # the id last: the same key can exist in two categories, and the order must be total for cursors
    return (-PRIORITY_RANK[m.priority], -int(m.updated_at.timestamp()), m.key, m.id)


def by_priority(memories: list[Memory]) -> list[Memory]:
    """Critical first, then most recently updated: the order an LLM context wants them in."""
    return sorted(memories, key=_rank)


def _position(cursor: str) -> Rank:
    try:
        after = codec.decode_cursor(cursor).get("after")
    except codec.BadCursor as exc:
        raise bad_cursor() from exc
    if isinstance(after, list) and len(after) == 4:
        priority, updated, key, mem_id = after
        if (
            isinstance(priority, int)
            and isinstance(updated, int)
            and isinstance(key, str)
            and isinstance(mem_id, str)
        ):
            return (priority, updated, key, mem_id)
    raise bad_cursor()


def by_tag_page(
    mind: Mind, tag: str, *, limit: int | None, cursor: str | None
) -> tuple[list[Memory], str | None]:
    """Live memories with a tag in recall order: all of them, or `limit` and a cursor to the rest.

    The cursor is the last returned memory's place in that order (not an offset), so a memory written
    between two pages does not shift the next page onto one already seen."""
    ordered = by_priority(live(mind, tag=tag))
    if cursor:
        after = _position(cursor)
        ordered = [m for m in ordered if _rank(m) > after]
    if limit is None or len(ordered) <= limit:
        return ordered, None
    page = ordered[:limit]
    return page, codec.encode_cursor({"after": list(_rank(page[-1]))})


def live(mind: Mind, *, category: Category | None = None, tag: str | None = None) -> list[Memory]:
    flt = nuggets.MemoryFilter(category=category, tag=_tag(tag), live_at=utcnow())
    return nuggets.query(mind.space, flt)[0]


def search(mind: Mind, query: str, *, tag: str | None, limit: int) -> list[ScoredMemory]:
    """Full-text search: BM25 over the user's live memories (Thai-aware tokens)."""
    if not query.strip():
        raise ValidationFailed.at(["query", "q"], "must not be blank")
    from synapse.search import scoring

    memories = live(mind, tag=tag)
    best = scoring.full_text([(m.content, m.key, m.tags) for m in memories], query, limit)
    return [ScoredMemory(**memories[i].model_dump(), score=round(score, 4)) for i, score in best]


def parse_window(within: str) -> timedelta:
    match = _WINDOW.match(within)
    if not match:
        raise ValidationFailed.at(["query", "within"], "must be a number and m, h or d, like 30m, 24h or 7d")
    amount, unit = int(match.group(1)), match.group(2)
    window = timedelta(**{_UNITS[unit]: amount})
    if window <= timedelta(0) or window > timedelta(days=3650):
        raise ValidationFailed.at(["query", "within"], "must be between 1m and 3650d")
    return window


def expiring(mind: Mind, within: str) -> list[Memory]:
    now = utcnow()
    flt = nuggets.MemoryFilter(live_at=now, expiring_before=now + parse_window(within))
    memories = nuggets.query(mind.space, flt)[0]
    return sorted(memories, key=lambda m: (m.expires_at or datetime.max, m.key))


def render_text(mind_name: str, matching: list[Memory], limit: int) -> str:
    """The `GET /memory/recall` text (API.md): a header, then one numbered block per memory. Here, not
    in `recall`, so that plain-text recall does not import numpy.

    `matching` is every live memory that matched, already sorted (priority, then most recently
    updated); the header counts all of them, the first `limit` are shown.
    """
    verified = sum(1 for m in matching if m.verified)
    lines = [
        f"Mind: {mind_name}",
        f"Memories: {len(matching)} total ({verified} verified, {len(matching) - verified} unverified)",
    ]
    for n, m in enumerate(matching[:limit], start=1):
        state = "verified" if m.verified else "unverified"
        lines.append("")
        lines.append(f"[{n:03d}] {m.category.value} ({m.priority.value.upper()}) [{state}] {m.key}")
        lines.extend(f"    {line}" for line in m.content.splitlines() or [""])
        if m.tags:
            lines.append(f"    Tags: {', '.join(m.tags)}")
    return "\n".join(lines) + "\n"
