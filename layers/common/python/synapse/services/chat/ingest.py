"""Ingest: raw messages and session count → event → transient filter → extract → embed → upsert →
identity (the order README "How it works" gives: the messages are kept even if Gemini is down)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

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
from synapse.core.models.base import Category, Change, Role, Source, normalize_tags, utcnow
from synapse.core.models.chat import IngestIn, IngestOut
from synapse.core.models.memory import Memory
from synapse.core.principal import Principal
from synapse.search import cache, corpus
from synapse.services.account.providers import gemini_key_for
from synapse.services.memory import writers
from synapse.services.memory.identity import IDENTITY_CATEGORIES, rebuild_identity
from synapse.store import codec, conversations, db, keys, nuggets
from synapse.store.keys import Space
from synapse.store.minds import Mind

PROMPT_CATEGORIES = (Category.identity, Category.preference, Category.project, Category.skill)
PROMPT_MAX_KEYS = 200


def body_digest(body: IngestIn) -> str:
    """The request's content: session and messages (the user is the partition it is kept in)."""
    payload = json.dumps(
        [body.sessionId, [[m.role.value, m.content] for m in body.messages]], ensure_ascii=False
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def request_id(digest: str, client_key: str | None) -> str:
    """What makes two ingests "the same request": the client's Idempotency-Key when it sent one (the
    same turns under two keys are two ingests), else the content. One identity for both the cached
    answer and the marker of the stored messages."""
    return hashlib.sha256(f"key\x1f{client_key}".encode()).hexdigest()[:32] if client_key else digest


def ingest(space: Space, body: IngestIn, request: str) -> IngestOut:
    """Raw messages → event → transient filter → extract → embed → upsert → identity, for a caller
    already checked (`space` is theirs)."""
    cfg = settings()
    now = utcnow()
    # 1. raw messages and the session count first, atomically and once: kept even if Gemini is down
    span = conversations.append_messages(
        space,
        body.sessionId,
        [(m.role.value, m.content) for m in body.messages],
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
    kept = [m for m in body.messages if not transient.is_transient(m.content)]
    skipped = len(body.messages) - len(kept)
    if not any(m.role == Role.user for m in kept):
        return _nothing_new(skipped)
    # 3. one extraction call, shown the keys the mind already has: from the container's copy of the
    # mind (the search corpus, without vectors), which reads only what changed since the last ingest
    known = cache.load(space, None)
    existing = existing_for_prompt(known)
    api_key = gemini_key_for(space.user_id)
    extracted = _dedupe(llm.get_extractor(api_key).extract(kept, existing))
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
    written, created = _upsert(space, body.sessionId, changes, reads)
    # what a user said and this ingest changed is kept in the history; the answer names it (`reads`
    # holds what each write replaced, read again where another write came in between)
    overwrote = [m.id for m in written if m.id in reads and reads[m.id].memory.source == Source.user]
    # 6. the identity line, when identity or preference memories changed
    identity_updated = False
    if any(n.category in IDENTITY_CATEGORIES for n in written):
        after = {m.id: m for m in corpus.memories_of(known, IDENTITY_CATEGORIES, space)}
        after.update({m.id: m for m in written})
        identity_updated = rebuild_identity(space, after.values())
    return IngestOut(
        nuggets_created=created,
        nuggets_updated=len(written) - created,
        skipped_transient=skipped,
        identity_updated=identity_updated,
        nuggets=written,
        overwrote_user=overwrote,
    )


def _upsert(
    space: Space,
    session_id: str,
    changes: dict[str, tuple[llm.ExtractedNugget, codec.Vector | None]],
    reads: dict[str, nuggets.Stored],
) -> tuple[list[Memory], int]:
    """Write every nugget, each conditional on the revision read; those another writer changed in
    between are read again and redone on top of that write, and those deleted in between stay deleted
    (the deletion is newer than what the ingest read). Returns (the memories written, how many new)."""
    written: dict[str, Memory] = {}
    created: set[str] = set()
    pending = list(changes)
    for attempt in range(nuggets.WRITE_ATTEMPTS):
        batch = [
            _change(space, session_id, mem_id, *changes[mem_id], reads.get(mem_id)) for mem_id in pending
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
            elif reads.pop(mem_id, None) is not None:
                pending.remove(mem_id)  # deleted since it was read: left to the newer write
        if not pending:
            break
    if pending:
        raise db.busy()
    return [written[mem_id] for mem_id in changes if mem_id in written], len(created)


def _change(
    space: Space,
    session_id: str,
    mem_id: str,
    nugget: llm.ExtractedNugget,
    vector: codec.Vector | None,
    read: nuggets.Stored | None,
) -> nuggets.Write:
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
    )
    kind = Change.updated if read is not None else Change.created
    return nuggets.Write(memory=memory, read=read, vector=vector, kind=kind)


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


def _run(identity: dict[str, str], space: Space, body: IngestIn) -> IngestOut:
    return ingest(space, body, identity["request"])


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
    identity = {"mind": space.mind_id, "request": request_id(digest, client_key), "content": digest}
    try:
        result: IngestOut = once(identity=identity, space=space, body=body)
    except IdempotencyAlreadyInProgressError as exc:
        raise Conflict("The same ingest is being processed right now; retry in a moment.") from exc
    except IdempotencyValidationError as exc:
        raise ValidationFailed.at(
            ["header", "idempotency-key"], "was already used with a different body"
        ) from exc
    except IdempotencyPersistenceLayerError as exc:
        raise UpstreamUnavailable("The database is unavailable; try again shortly.", retry_after=2) from exc
    return result
