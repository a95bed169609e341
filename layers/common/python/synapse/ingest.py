"""Ingest: raw messages and session count → event → transient filter → extract → embed → upsert →
identity (the order README "How it works" gives: the messages are kept even if Gemini is down)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

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

from synapse import events, llm, store
from synapse.auth import Principal
from synapse.config import settings
from synapse.errors import Conflict, UpstreamUnavailable, ValidationFailed
from synapse.identity import IDENTITY_CATEGORIES, rebuild_identity
from synapse.models import (
    Category,
    IngestIn,
    IngestOut,
    Memory,
    Role,
    Source,
    normalize_tags,
    utcnow,
)
from synapse.providers import gemini_key_for

PROMPT_CATEGORIES = (Category.identity, Category.preference, Category.project, Category.skill)
PROMPT_MAX_KEYS = 200


def request_hash(user_id: str, body: IngestIn, client_key: str | None = None) -> str:
    """What makes two ingests "the same request": user, session and messages, and the client's
    Idempotency-Key when it sent one (the same turns under two keys are two ingests)."""
    parts: list[Any] = [user_id, body.sessionId, [[m.role.value, m.content] for m in body.messages]]
    if client_key:
        parts.append(client_key)
    payload = json.dumps(parts, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def ingest(who: Principal, body: IngestIn, client_key: str | None = None) -> IngestOut:
    user_id = who.check_user_id(body.userId)
    cfg = settings()
    now = utcnow()
    # 1. raw messages and the session count first, atomically and once: kept even if Gemini is down
    span = store.append_messages(
        user_id,
        body.sessionId,
        [(m.role.value, m.content) for m in body.messages],
        request_hash=request_hash(user_id, body, client_key),
        now=now,
        ttl_days=cfg.raw_message_ttl_days,
    )
    before = span.first - 1
    events.publish_summaries_due(
        user_id, body.sessionId, events.summary_boundaries(before, span.last, cfg.summary_every)
    )
    # 2. skip transient turns; an all-transient batch makes no model call at all
    kept = [m for m in body.messages if not llm.is_transient(m.content)]
    skipped = len(body.messages) - len(kept)
    if not any(m.role == Role.user for m in kept):
        return _nothing_new(skipped)
    # 3. one extraction call, shown the keys the user already has
    current = {(m.category, m.key): (m, rev) for m, rev in store.memories_with_rev(user_id)}
    existing = existing_for_prompt([m for m, _ in current.values()])
    api_key = gemini_key_for(user_id)
    extracted = _dedupe(llm.get_extractor(api_key).extract(kept, existing))
    if not extracted:
        return _nothing_new(skipped)
    # 4. one batched embedding call for every nugget
    from synapse.embeddings import get_embedder

    embedder = get_embedder(api_key)
    vectors = embedder.embed_documents([n.content for n in extracted]) if embedder is not None else None
    # 5. upsert by key: full items in batched writes
    items, nuggets, created = [], [], 0
    for i, nugget in enumerate(extracted):
        old, rev = current.get((nugget.category, nugget.key), (None, 0))
        memory = Memory(
            id=store.memory_id(user_id, nugget.category, nugget.key),
            category=nugget.category,
            key=nugget.key,
            content=nugget.content,
            tags=normalize_tags(nugget.tags)[:20],
            priority=nugget.priority,
            # written by the service on the caller's behalf: an agent's memory, unverified
            source=Source.agent,
            verified=False,
            confidence=nugget.confidence,
            expires_at=old.expires_at if old else None,
            user_id=user_id,
            session_id=body.sessionId,
            created_at=old.created_at if old else now,
            updated_at=now,
        )
        created += old is None
        vector = None
        if vectors is not None and embedder is not None:
            vector = store.make_vector(vectors[i], embedder.model)
        items.append(store.memory_item(memory, vector, rev + 1))
        nuggets.append(memory)
    store.put_memories(user_id, items)
    # 6. the identity line, when identity or preference memories changed
    identity_updated = False
    if any(n.category in IDENTITY_CATEGORIES for n in nuggets):
        after = {key: m for key, (m, _) in current.items()}
        after.update({(m.category, m.key): m for m in nuggets})
        identity_updated = rebuild_identity(user_id, after.values())
    return IngestOut(
        nuggets_created=created,
        nuggets_updated=len(nuggets) - created,
        skipped_transient=skipped,
        identity_updated=identity_updated,
        nuggets=nuggets,
    )


def _nothing_new(skipped: int) -> IngestOut:
    return IngestOut(
        nuggets_created=0, nuggets_updated=0, skipped_transient=skipped, identity_updated=False, nuggets=[]
    )


def existing_for_prompt(memories: Sequence[Memory]) -> list[llm.ExistingKey]:
    """The keys shown to the extractor: the categories whose keys are stable slots first, then the
    most recently updated others, bounded so the prompt stays small however many memories exist."""
    ranked = sorted(
        memories,
        key=lambda m: (m.category not in PROMPT_CATEGORIES, -m.updated_at.timestamp(), m.key),
    )
    return [
        llm.ExistingKey(category=m.category, key=m.key, content=m.content[:160])
        for m in ranked[:PROMPT_MAX_KEYS]
    ]


def _dedupe(nuggets: Sequence[llm.ExtractedNugget]) -> list[llm.ExtractedNugget]:
    """One nugget per (category, key) in a batch: the last one said wins."""
    by_key = {(n.category, n.key): n for n in nuggets}
    return list(by_key.values())


# --- retries: Powertools idempotency ------------------------------------------------------------
# Without a client key the whole request is the key; with one, (user, key) is, and the body must match.
_BY_BODY = IdempotencyConfig(expires_after_seconds=3600)
_BY_CLIENT_KEY = IdempotencyConfig(
    expires_after_seconds=3600,
    event_key_jmespath="[userId, idempotencyKey]",
    payload_validation_jmespath="body",
)


def register_lambda_context(context: LambdaContext) -> None:
    """Powertools times out an in-progress record with the Lambda's remaining time."""
    _BY_BODY.register_lambda_context(context)
    _BY_CLIENT_KEY.register_lambda_context(context)


def _run(request: dict[str, Any], who: Principal) -> IngestOut:
    return ingest(who, IngestIn.model_validate(request["body"]), client_key=request["idempotencyKey"])


def ingest_once(who: Principal, body: IngestIn, client_key: str | None) -> IngestOut:
    """`ingest`, once per request: a retry within an hour gets the first answer.

    Records live in the user's own partition of the idempotency table (`static_pk_value`), so
    DELETE /me can delete the cached answers, which hold memory texts. The layer is built per request
    (cheap: the container's one DynamoDB client is reused).
    """
    user_id = who.check_user_id(body.userId)
    persistence = DynamoDBPersistenceLayer(
        table_name=settings().idempotency_table,
        static_pk_value=store.idempotency_pk(user_id),
        sort_key_attr="sk",
        boto3_client=store.client(),
    )
    once = idempotent_function(
        _run,
        data_keyword_argument="request",
        persistence_store=persistence,
        config=_BY_CLIENT_KEY if client_key else _BY_BODY,
        output_serializer=PydanticSerializer(model=IngestOut),
    )
    # the key covers the user: two users' identical requests are different requests
    request = {
        "userId": user_id,
        "idempotencyKey": client_key,
        "body": {**body.model_dump(mode="json"), "userId": user_id},
    }
    try:
        result: IngestOut = once(request=request, who=who)
    except IdempotencyAlreadyInProgressError as exc:
        raise Conflict("The same ingest is being processed right now; retry in a moment.") from exc
    except IdempotencyValidationError as exc:
        raise ValidationFailed.at(
            ["header", "idempotency-key"], "was already used with a different body"
        ) from exc
    except IdempotencyPersistenceLayerError as exc:
        raise UpstreamUnavailable("The database is unavailable; try again shortly.", retry_after=2) from exc
    return result
