"""Ingest: raw messages and session count → event → transient filter → extract → embed → upsert →
identity (the order README "How it works" gives: the messages are kept even if Gemini is down).

Time: each message is stored with when it was said (`created_at`, default the request's arrival),
and the extractor reads its relative dates against that moment in the request's `timezone`, else
the mind's. Every memory an ingest writes gets a `valid_at`: the moment its nugget is about, else when
its message was said; an update by key replaces it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from datetime import datetime

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyPersistenceLayerError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.idempotency.serialization.pydantic import PydanticSerializer
from aws_lambda_powertools.utilities.typing import LambdaContext

from synapse.ai import llm, transient
from synapse.aws import events
from synapse.core.config import settings
from synapse.core.errors import Conflict, UpstreamUnavailable, ValidationFailed
from synapse.core.models.base import Category, Change, Role, Source, iso, normalize_tags, utcnow
from synapse.core.models.chat import ChatMessage, IngestIn, IngestOut
from synapse.core.models.memory import Memory
from synapse.core.models.review import Proposal, ProposalKind
from synapse.core.principal import Principal
from synapse.search import cache, corpus
from synapse.services.account.providers import gemini_key_for
from synapse.services.memory import memories, writers
from synapse.services.memory.identity import IDENTITY_CATEGORIES, rebuild_identity
from synapse.store import codec, conversations, db, keys, nuggets, proposals
from synapse.store.account.minds import Mind
from synapse.store.keys import Space

PROMPT_CATEGORIES = (Category.identity, Category.preference, Category.project, Category.skill)
PROMPT_MAX_KEYS = 200


def body_digest(body: IngestIn) -> str:
    """The turns: session and messages, each with the time it was said when the body gives one (the
    user is the partition it is kept in). The same words said at two given times are two turns; a
    message without `created_at` is said "when the request arrives", and a retry arrives later but
    is the same turn, so then no time is part of it (and the digest is the one it was before times)."""
    turns = [[m.role.value, m.content, *([iso(m.created_at)] if m.created_at else [])] for m in body.messages]
    payload = json.dumps([body.sessionId, turns], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def content_digest(body: IngestIn, turns: str) -> str:
    """The whole body, for an Idempotency-Key's check (one key, another body: 422): the turns and the
    timezone their dates are read in."""
    if body.timezone is None:
        return turns
    return hashlib.sha256(f"{turns}\x1f{body.timezone}".encode()).hexdigest()[:32]


def request_id(digest: str, client_key: str | None) -> str:
    """What makes two ingests "the same request": the client's Idempotency-Key when it sent one (the
    same turns under two keys are two ingests), else the content. One identity for both the cached
    answer and the marker of the stored messages."""
    return hashlib.sha256(f"key\x1f{client_key}".encode()).hexdigest()[:32] if client_key else digest


def ingest(mind: Mind, body: IngestIn, request: str) -> IngestOut:
    """Raw messages → event → transient filter → extract → embed → upsert → identity, for a caller
    already checked (`mind` is theirs). With the mind's review_agent_changes, a nugget that would
    change a verified memory becomes a proposal instead: ingest writes as an agent."""
    review = lambda: mind.review_agent_changes  # noqa: E731 (read only when a verified memory is met)
    cfg = settings()
    space = mind.space
    now = utcnow()
    # every message has its time from here on: the one it was said at, else the request's arrival
    said = [m if m.created_at else m.model_copy(update={"created_at": now}) for m in body.messages]
    # 1. raw messages and the session count first, atomically and once: kept even if Gemini is down
    span = conversations.append_messages(
        space,
        body.sessionId,
        [conversations.NewMessage(m.role.value, m.content, _said_at(m, now)) for m in said],
        request_id=request,
        now=now,
        ttl_days=cfg.raw_message_ttl_days,
    )
    events.publish_summaries_due(
        space.user_id,
        body.sessionId,
        events.summary_boundaries(span.first - 1, span.last, cfg.summary_every),
        space.mind_id,
    )
    # 2. skip transient turns; an all-transient batch makes no model call at all
    kept = [m for m in said if not transient.is_transient(m.content)]
    skipped = len(said) - len(kept)
    if not any(m.role == Role.user for m in kept):
        return _nothing_new(skipped)
    # 3. one extraction call, shown the keys the mind already has: from the container's copy of the
    # mind (the search corpus, without vectors), which reads only what changed since the last ingest
    known = cache.load(space, None)
    existing = existing_for_prompt(known)
    related = related_for_prompt(known, kept, now.timestamp())
    api_key = gemini_key_for(space.user_id)
    # relative dates are read in the request's timezone, else the mind's (its record read only then)
    timezone = body.timezone or mind.timezone
    extracted = _dedupe(llm.get_extractor(api_key).extract(kept, existing, related, timezone=timezone))
    if not extracted:
        return _nothing_new(skipped)
    # 4. one batched embedding call for every nugget
    from synapse.ai.embeddings import get_embedder

    embedder = get_embedder(api_key)
    vectors = embedder.embed_documents([n.content for n in extracted]) if embedder is not None else None
    # 5. upsert by key, conditional on the revisions read: a write landing in between is read again
    changes: dict[str, tuple[llm.ExtractedNugget, codec.Vector | None]] = {}
    for i, nugget in enumerate(extracted):
        vector = None
        if vectors is not None and embedder is not None:
            vector = codec.make_vector(vectors[i], embedder.model)
        changes[nuggets.id_for(space, nugget.category, nugget.key)] = (nugget, vector)
    # the memories this ingest writes, as they are now (their revisions): those only, not the mind
    reads = nuggets.stored_of(space, list(changes))
    latest = max(_said_at(m, now) for m in kept)
    # a nugget that replaces a memory under another key: a verified one is proposed for a person to
    # decide (the nugget waits in the proposal), any other is superseded once the nugget is written
    replacing, held = _replacements(space, body.sessionId, changes, reads, review, latest)
    written, created, proposed = _upsert(space, body.sessionId, changes, reads, review, latest)
    hidden = _supersede(space, replacing, written, review, proposed)
    proposed = held + proposed
    # what a user said and this ingest changed is kept in the history; the answer names it (`reads`
    # holds what each write replaced, read again where another write came in between)
    overwrote = [m.id for m in written if m.id in reads and reads[m.id].memory.source == Source.user]
    # 6. the identity line, when identity or preference memories changed
    identity_updated = False
    if any(n.category in IDENTITY_CATEGORIES for n in written):
        after = {m.id: m for m in corpus.memories_of(known, IDENTITY_CATEGORIES, space)}
        after.update({m.id: m for m in written})
        for mem_id in hidden:
            after.pop(mem_id, None)
        identity_updated = rebuild_identity(space, after.values())
    return IngestOut(
        nuggets_created=created,
        nuggets_updated=len(written) - created,
        skipped_transient=skipped,
        identity_updated=identity_updated,
        nuggets=written,
        overwrote_user=overwrote,
        proposed=proposed,
    )


def _upsert(
    space: Space,
    session_id: str,
    changes: dict[str, tuple[llm.ExtractedNugget, codec.Vector | None]],
    reads: dict[str, nuggets.Stored],
    review: Callable[[], bool],
    said_at: datetime,
) -> tuple[list[Memory], int, list[Proposal]]:
    """Write every nugget, each conditional on the revision read; those another writer changed in
    between are read again and redone on top of that write, and those deleted in between stay deleted
    (the deletion is newer than what the ingest read). A nugget that would change a memory verified
    as read (first, or again after a lost race) is proposed instead, with `review`. Returns (the
    memories written, how many new, the proposals)."""
    written: dict[str, Memory] = {}
    created: set[str] = set()
    proposed: list[Proposal] = []
    pending = list(changes)

    def hold(mem_id: str) -> bool:
        """Propose the nugget if the memory is verified as read (read again while it keeps changing)."""
        for attempt in range(nuggets.WRITE_ATTEMPTS):
            read = reads.get(mem_id)
            if read is None or not writers.reviewed(True, read.memory.verified, review):
                return False
            change = _change(space, session_id, mem_id, *changes[mem_id], read, said_at)
            try:
                proposed.append(
                    memories.propose(
                        space, read, ProposalKind.update, change.memory, key_id=None, session_id=session_id
                    )
                )
                return True
            except proposals.Stale:
                db.backoff(attempt)
                found = nuggets.get(space, mem_id)
                if found is None:
                    reads.pop(mem_id, None)
                else:
                    reads[mem_id] = found
        raise db.busy()

    pending = [mem_id for mem_id in pending if not hold(mem_id)]
    for attempt in range(nuggets.WRITE_ATTEMPTS):
        if not pending:
            break
        batch = [
            _change(space, session_id, mem_id, *changes[mem_id], reads.get(mem_id), said_at)
            for mem_id in pending
        ]
        try:
            nuggets.save(space, batch)
            pending = []
        except nuggets.LostRace as lost:
            pending = lost.ids
        for change in batch:
            if change.memory.id not in pending:
                written[change.memory.id] = change.memory
                if change.read is None:
                    created.add(change.memory.id)
        if not pending:
            break
        db.backoff(attempt)
        for mem_id in list(pending):
            found = nuggets.get(space, mem_id)
            if found is not None:
                reads[mem_id] = found
                if hold(mem_id):  # verified since it was read
                    pending.remove(mem_id)
            elif reads.pop(mem_id, None) is not None:
                pending.remove(mem_id)  # deleted since it was read: left to the newer write
        if not pending:
            break
    if pending:
        raise db.busy()
    return [written[mem_id] for mem_id in changes if mem_id in written], len(created), proposed


def _replacements(
    space: Space,
    session_id: str,
    changes: dict[str, tuple[llm.ExtractedNugget, codec.Vector | None]],
    reads: dict[str, nuggets.Stored],
    review: Callable[[], bool],
    said_at: datetime,
) -> tuple[dict[str, str], list[Proposal]]:
    """The memories the extracted nuggets supersede ({new id: old id}, live ones only), and the
    `supersede` proposals of verified ones (their nuggets are taken out of `changes`: they wait)."""
    wanted: dict[str, str] = {}
    for new_id, (nugget, _) in changes.items():
        if nugget.supersedes:
            category, _, key = nugget.supersedes.partition("/")
            old_id = nuggets.id_for(space, Category(category), key)
            if old_id != new_id and old_id not in changes:
                wanted[new_id] = old_id
    if not wanted:
        return {}, []
    now = utcnow()
    olds = nuggets.stored_of(space, list(set(wanted.values())))
    replacing: dict[str, str] = {}
    held: list[Proposal] = []
    for new_id, old_id in wanted.items():
        old = olds.get(old_id)
        if old is None or not old.memory.is_live(now):
            continue  # gone, expired or superseded already: nothing to replace
        if writers.reviewed(True, old.memory.verified, review):
            replacement = _change(
                space, session_id, new_id, *changes[new_id], reads.get(new_id), said_at
            ).memory
            try:
                held.append(
                    memories.propose(
                        space, old, ProposalKind.supersede, replacement, key_id=None, session_id=session_id
                    )
                )
                del changes[new_id]
            except proposals.Stale:
                pass  # changed since it was read: the nugget is written, the old one left as it is
            continue
        replacing[new_id] = old_id
    return replacing, held


def _supersede(
    space: Space,
    replacing: dict[str, str],
    written: list[Memory],
    review: Callable[[], bool],
    proposed: list[Proposal],
) -> set[str]:
    """Mark each replaced memory `superseded_by` its written replacement (a version of its own, change
    `superseded`); one verified since it was read gets a `supersede` proposal instead. Returns the ids
    hidden."""
    by_id = {m.id: m for m in written}
    hidden: set[str] = set()
    for new_id, old_id in replacing.items():
        if new_id not in by_id:
            continue

        def make(read: nuggets.Stored | None, new_id: str = new_id) -> Memory:
            if read is None or not read.memory.is_live(utcnow()):
                raise _Gone
            if writers.reviewed(True, read.memory.verified, review):
                raise memories.Held(read, by_id[new_id])
            return read.memory.model_copy(update={"superseded_by": new_id, "updated_at": utcnow()})

        try:
            memories.write(space, old_id, make, kind=lambda _: Change.superseded)
            hidden.add(old_id)
        except _Gone:
            continue
        except memories.Held as exc:
            try:
                proposed.append(
                    memories.propose(
                        space,
                        exc.read,
                        ProposalKind.supersede,
                        exc.memory,
                        key_id=None,
                        session_id=by_id[new_id].session_id,
                    )
                )
            except proposals.Stale:
                continue
    return hidden


class _Gone(Exception):
    """The memory a nugget would supersede is gone (or hidden) already."""


def _change(
    space: Space,
    session_id: str,
    mem_id: str,
    nugget: llm.ExtractedNugget,
    vector: codec.Vector | None,
    read: nuggets.Stored | None,
    said_at: datetime,
) -> nuggets.Write:
    """The memory a nugget makes, over what `read` holds (None: a new one). Its `valid_at` is the
    nugget's (the extractors give one to every nugget of a timed message), else `said_at` (the latest
    kept message's time), even over an older one: an update says when it is true now."""
    old = read.memory if read is not None else None
    now = utcnow()
    memory = Memory(
        id=mem_id,
        category=nugget.category,
        key=nugget.key,
        content=nugget.content,
        tags=normalize_tags(nugget.tags)[:20],
        priority=nugget.priority,
        **writers.EXTRACTION.stamp(nugget.confidence),
        expires_at=old.expires_at if old else None,
        user_id=space.user_id,
        session_id=session_id,
        created_at=old.created_at if old else now,
        updated_at=now,
        version=nuggets.next_version(read),
        mind_id=space.mind_id,
        valid_at=nugget.valid_at or said_at,
    )
    kind = Change.updated if read is not None else Change.created
    return nuggets.Write(memory=memory, read=read, vector=vector, kind=kind)


def _said_at(message: ChatMessage, now: datetime) -> datetime:
    return message.created_at or now


def _nothing_new(skipped: int) -> IngestOut:
    return IngestOut(
        nuggets_created=0, nuggets_updated=0, skipped_transient=skipped, identity_updated=False, nuggets=[]
    )


def existing_for_prompt(known: corpus.Corpus) -> list[llm.ExistingKey]:
    """The keys shown to the extractor: the categories whose keys are stable slots first, then the
    most recently updated others, bounded so the prompt stays small however many memories exist."""
    return [
        llm.ExistingKey(category=Category(category), key=key, content=content[:160])
        for category, key, content in corpus.recent_keys(known, PROMPT_CATEGORIES, PROMPT_MAX_KEYS)
    ]


RELATED_PER_MESSAGE = 3
RELATED_MAX = 24


def related_for_prompt(
    known: corpus.Corpus, kept: Sequence[llm.Message], now: float
) -> list[llm.ExistingKey]:
    """The mind's live memories most like what each user message says (full text over the container's
    corpus: no model call), for the extractor to update or supersede; at most RELATED_MAX."""
    from synapse.search import scoring

    if not len(known):
        return []
    mask = scoring.live(known, now, None, None)
    rows: dict[int, None] = {}
    for message in kept:
        if message.role == Role.user:
            for row, _ in scoring.best(known, message.content, None, mask, now, RELATED_PER_MESSAGE):
                rows[row] = None
    c = known.columns
    return [
        llm.ExistingKey(category=Category(c.categories[i]), key=c.keys[i], content=c.contents[i][:160])
        for i in list(rows)[:RELATED_MAX]
    ]


def _dedupe(extracted: Sequence[llm.ExtractedNugget]) -> list[llm.ExtractedNugget]:
    """One nugget per (category, key) in a batch: the last one said wins."""
    by_key = {(n.category, n.key): n for n in extracted}
    return list(by_key.values())


# --- retries: Powertools idempotency ------------------------------------------------------------
# The record's key is the request identity; with a client key, the content must match too.
# The records are kept in the user's partition, so the mind is part of the key: the same turns sent to
# two minds are two ingests, each stored in its own mind.
_BY_CONTENT = IdempotencyConfig(expires_after_seconds=3600, event_key_jmespath="[mind, request]")
_BY_CLIENT_KEY = IdempotencyConfig(
    expires_after_seconds=3600, event_key_jmespath="[mind, request]", payload_validation_jmespath="content"
)


def register_lambda_context(context: LambdaContext) -> None:
    """Powertools times out an in-progress record with the Lambda's remaining time."""
    _BY_CONTENT.register_lambda_context(context)
    _BY_CLIENT_KEY.register_lambda_context(context)


def _run(identity: dict[str, str], mind: Mind, body: IngestIn) -> IngestOut:
    return ingest(mind, body, identity["request"])


def ingest_once(who: Principal, mind: Mind, body: IngestIn, client_key: str | None) -> IngestOut:
    """POST /memory/ingest: `ingest`, once per request; a retry within an hour gets the first answer.

    Records live in the user's own partition of the idempotency table (`static_pk_value`), so
    DELETE /me can delete the cached answers, which hold memory texts. The layer is built per request
    (cheap: the container's one DynamoDB client is reused).
    """
    who.check_user_id(body.userId)
    space = mind.space
    digest = body_digest(body)
    persistence = DynamoDBPersistenceLayer(
        table_name=settings().idempotency_table,
        static_pk_value=keys.idempotency_pk(space.user_id),
        sort_key_attr="sk",
        boto3_client=db.client(),
    )
    once = idempotent_function(
        _run,
        data_keyword_argument="identity",
        persistence_store=persistence,
        config=_BY_CLIENT_KEY if client_key else _BY_CONTENT,
        output_serializer=PydanticSerializer(model=IngestOut),
    )
    identity = {
        "mind": space.mind_id,
        "request": request_id(digest, client_key),
        "content": content_digest(body, digest),
    }
    try:
        result: IngestOut = once(identity=identity, mind=mind, body=body)
    except IdempotencyAlreadyInProgressError as exc:
        raise Conflict("The same ingest is being processed right now; retry in a moment.") from exc
    except IdempotencyValidationError as exc:
        raise ValidationFailed.at(
            ["header", "idempotency-key"], "was already used with a different body"
        ) from exc
    except IdempotencyPersistenceLayerError as exc:
        raise UpstreamUnavailable("The database is unavailable; try again shortly.", retry_after=2) from exc
    return result
