"""The structured memory model: upsert by (category, key), source/verified/confidence rules, reads."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from synapse import store
from synapse.auth import Principal
from synapse.errors import NotFound, ValidationFailed
from synapse.identity import rebuild_identity
from synapse.models import (
    PRIORITY_RANK,
    WITHIN_PATTERN,
    Category,
    Memory,
    MemoryIn,
    MemoryPatch,
    ScoredMemory,
    Source,
    check_tag,
    utcnow,
)

AGENT_CONFIDENCE = 0.7
USER_CONFIDENCE = 1.0
_WINDOW = re.compile(WITHIN_PATTERN)
_UNITS = {"m": "minutes", "h": "hours", "d": "days"}


def default_confidence(who: Principal) -> float:
    return USER_CONFIDENCE if who.is_user else AGENT_CONFIDENCE


def embed_document(user_id: str, text: str) -> store.Vector | None:
    """The stored vector of a memory's content (its key and tags are for full-text search), or None
    when no embedder is configured."""
    from synapse.embeddings import get_embedder  # lazy: keeps google.genai out of cold starts
    from synapse.providers import gemini_key_for

    embedder = get_embedder(gemini_key_for(user_id))
    if embedder is None:
        return None
    vec = embedder.embed_documents([text])[0]
    return store.make_vector(vec, embedder.model)


def put(who: Principal, body: MemoryIn) -> tuple[Memory, bool]:
    """POST /memory: create, or update the memory with the same key. Returns (memory, created)."""
    user_id = who.check_user_id(body.userId)
    sent = body.model_fields_set
    fields: dict[str, Any] = {
        "content": body.content,
        "source": who.source.value,
        # only a human's write is verified; an agent's write (re)sets it to false
        "verified": who.is_user,
        "confidence": body.confidence if body.confidence is not None else default_confidence(who),
    }
    for name in ("tags", "priority", "expires_at"):
        if name in sent:
            fields[name] = getattr(body, name)
    defaults: dict[str, Any] = {"tags": [], "priority": body.priority.value}
    vector = embed_document(user_id, body.content)
    memory, created = store.upsert_memory(
        user_id,
        category=body.category,
        key=body.key,
        fields=_storable(fields),
        defaults=defaults,
        now=utcnow(),
        vector=vector,
    )
    _identity_changed(user_id, memory.category)
    return memory, created


def _identity_changed(user_id: str, category: Category) -> None:
    """The identity line follows the user's identity and preference memories, however written."""
    if category in (Category.identity, Category.preference):
        rebuild_identity(user_id)


def _storable(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.value if hasattr(v, "value") else v) for k, v in fields.items()}


def get(who: Principal, mem_id: str) -> Memory:
    memory = store.get_memory(who.user_id, mem_id)
    if memory is None or not memory.is_live(utcnow()):
        raise NotFound("No memory with that id.")
    return memory


def update(who: Principal, mem_id: str, patch: MemoryPatch) -> Memory:
    """PUT /memory/{id}: content, tags, priority, confidence, expires_at; never category or key."""
    who.check_user_id(patch.userId)
    sent = patch.model_fields_set
    # read first when the answer could be a 404 after work: a changed identity, or new content
    # (embedding it costs a model call, wasted on a memory that does not exist)
    if sent & {"category", "key", "content"}:
        current = store.get_memory(who.user_id, mem_id)
        if current is None:
            raise NotFound("No memory with that id.")
        for name in ("category", "key"):
            if name in sent and getattr(patch, name) != getattr(current, name):
                raise ValidationFailed.at(
                    ["body", name], "is part of the memory's identity and cannot change"
                )
    fields: dict[str, Any] = {"source": who.source.value, "verified": who.is_user}
    fields["confidence"] = patch.confidence if patch.confidence is not None else default_confidence(who)
    for name in ("content", "tags", "priority", "expires_at"):
        if name in sent:
            value = getattr(patch, name)
            if value is None and name != "expires_at":
                raise ValidationFailed.at(["body", name], "cannot be null")
            fields[name] = value
    vector = embed_document(who.user_id, patch.content) if patch.content is not None else None
    memory = store.update_memory(who.user_id, mem_id, fields=_storable(fields), now=utcnow(), vector=vector)
    _identity_changed(who.user_id, memory.category)
    return memory


def delete(who: Principal, mem_id: str) -> None:
    _identity_changed(who.user_id, store.delete_memory(who.user_id, mem_id))


def verify(who: Principal, mem_id: str) -> Memory:
    who.require_user()
    get(who, mem_id)  # 404 for a missing or expired memory
    return store.update_memory(who.user_id, mem_id, fields={"verified": True}, now=utcnow())


def list_page(
    who: Principal,
    *,
    category: Category | None,
    tag: str | None,
    source: Source | None,
    verified: bool | None,
    limit: int,
    cursor: str | None,
) -> tuple[list[Memory], str | None]:
    flt = store.MemoryFilter(
        category=category,
        tag=_tag(tag),
        source=source,
        verified=verified,
        live_at=utcnow(),
    )
    return store.query_memories(who.user_id, flt, limit=limit, cursor=cursor)


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
    after = store.decode_cursor(cursor).get("after")
    if isinstance(after, list) and len(after) == 4:
        priority, updated, key, mem_id = after
        if (
            isinstance(priority, int)
            and isinstance(updated, int)
            and isinstance(key, str)
            and isinstance(mem_id, str)
        ):
            return (priority, updated, key, mem_id)
    raise store.bad_cursor()


def by_tag_page(
    who: Principal, tag: str, *, limit: int | None, cursor: str | None
) -> tuple[list[Memory], str | None]:
    """Live memories with a tag in recall order: all of them, or `limit` and a cursor to the rest.

    The cursor is the last returned memory's place in that order (not an offset), so a memory written
    between two pages does not shift the next page onto one already seen."""
    ordered = by_priority(live(who, tag=tag))
    if cursor:
        after = _position(cursor)
        ordered = [m for m in ordered if _rank(m) > after]
    if limit is None or len(ordered) <= limit:
        return ordered, None
    page = ordered[:limit]
    return page, store.encode_cursor({"after": list(_rank(page[-1]))})


def live(who: Principal, *, category: Category | None = None, tag: str | None = None) -> list[Memory]:
    flt = store.MemoryFilter(category=category, tag=_tag(tag), live_at=utcnow())
    return store.query_memories(who.user_id, flt)[0]


def search(who: Principal, query: str, *, tag: str | None, limit: int) -> list[ScoredMemory]:
    """Full-text search: BM25 over the user's live memories (Thai-aware tokens)."""
    if not query.strip():
        raise ValidationFailed.at(["query", "q"], "must not be blank")
    from synapse.ranking import BM25, tokenize, top_k
    from synapse.recall import search_text

    memories = live(who, tag=tag)
    terms = tokenize(query)
    if not memories or not terms:
        return []
    index = BM25([tokenize(search_text(m.content, m.key, m.tags)) for m in memories])
    scores = index.scores(terms)
    best = [int(i) for i in top_k(scores, limit) if scores[int(i)] > 0]
    return [ScoredMemory(**memories[i].model_dump(), score=round(float(scores[i]), 4)) for i in best]


def parse_window(within: str) -> timedelta:
    match = _WINDOW.match(within)
    if not match:
        raise ValidationFailed.at(["query", "within"], "must be a number and m, h or d, like 30m, 24h or 7d")
    amount, unit = int(match.group(1)), match.group(2)
    window = timedelta(**{_UNITS[unit]: amount})
    if window <= timedelta(0) or window > timedelta(days=3650):
        raise ValidationFailed.at(["query", "within"], "must be between 1m and 3650d")
    return window


def expiring(who: Principal, within: str) -> list[Memory]:
    now = utcnow()
    flt = store.MemoryFilter(live_at=now, expiring_before=now + parse_window(within))
    memories = store.query_memories(who.user_id, flt)[0]
    return sorted(memories, key=lambda m: (m.expires_at or datetime.max, m.key))


def render_text(user_id: str, matching: list[Memory], limit: int) -> str:
    """The `GET /memory/recall` text (API.md): a header, then one numbered block per memory. Here, not
    in `recall`, so that plain-text recall does not import numpy.

    `matching` is every live memory that matched, already sorted (priority, then most recently
    updated); the header counts all of them, the first `limit` are shown.
    """
    verified = sum(1 for m in matching if m.verified)
    lines = [
        f"Mind: {user_id}",
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
