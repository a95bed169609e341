"""A user as a whole, across every mind: everything stored for them (export), or its deletion."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from synapse.core.config import settings
from synapse.core.models.base import parse_iso, utcnow
from synapse.core.models.memory import Memory, MemoryVersion
from synapse.store import db, snapshots
from synapse.store.account import exports, webhooks
from synapse.store.account.credentials import (
    ApiKeyRecord,
    ProviderRecord,
    api_key_from_item,
    list_api_keys,
    list_providers,
    provider_from_item,
)
from synapse.store.account.minds import MindRecord, list_minds, mind_from_item
from synapse.store.account.webhooks import WebhookRecord
from synapse.store.codec import plain_item, s
from synapse.store.conversations import StoredMessage, Summary, get_identity, summary_from_item
from synapse.store.keys import (
    DEFAULT_MIND,
    LOOKUP_SK,
    MESSAGE,
    SESSION,
    SUMMARY,
    Space,
    apikey_pk,
    idempotency_pk,
    parse_sk,
    user_pk,
)
from synapse.store.nuggets import from_item, version_from, with_history


@dataclass
class SessionData:
    session_id: str
    mind_id: str
    msg_count: int = 0
    chunks: int = 0
    messages: list[StoredMessage] = field(default_factory=list)


@dataclass
class UserData:
    """Everything of a user, grouped (vectors and ciphertexts are never read out of it)."""

    memories: list[Memory] = field(default_factory=list)
    history: dict[str, list[MemoryVersion]] = field(default_factory=dict)  # memory id → kept, newest first
    identity: dict[str, str] = field(default_factory=dict)  # mind id → line
    sessions: list[SessionData] = field(default_factory=list)
    summaries: list[tuple[str, str, Summary]] = field(default_factory=list)  # (mind, session, chunk)
    keys: list[ApiKeyRecord] = field(default_factory=list)
    providers: list[ProviderRecord] = field(default_factory=list)
    minds: list[MindRecord] = field(default_factory=list)


def everything(user_id: str) -> UserData:
    """One query over the user's partition; raw messages past their TTL (DynamoDB deletes them late)
    are left out."""
    out = UserData()
    now = int(utcnow().timestamp())
    sessions: dict[tuple[str, str], SessionData] = {}

    def session(mind: str, sid: str) -> SessionData:
        return sessions.setdefault((mind, sid), SessionData(session_id=sid, mind_id=mind))

    for item in db.query_prefix(user_pk(user_id), ""):
        key = parse_sk(item["sk"]["S"])
        if key.kind == "nugget":
            out.memories.append(from_item(Space(user_id, key.mind_id), item).memory)
            continue
        raw = plain_item({k: v for k, v in item.items() if k not in ("emb", "ciphertext")})
        if key.kind == "history":
            out.history.setdefault(key.name, []).insert(0, version_from(raw))
        elif key.kind == "identity":
            out.identity[key.mind_id] = raw.get("text", "")
        elif key.kind == "session":
            entry = session(key.mind_id, key.session_id)
            entry.msg_count = int(raw.get("msg_count", 0))
            entry.chunks = int(raw.get("chunks", 0))
        elif key.kind == "message" and int(raw.get("ttl", 0)) > now:
            session(key.mind_id, key.session_id).messages.append(
                StoredMessage(
                    seq=key.seq,
                    role=raw["role"],
                    content=raw["content"],
                    created_at=parse_iso(raw["created_at"]),
                )
            )
        elif key.kind == "summary":
            out.summaries.append((key.mind_id, key.session_id, summary_from_item(raw)))
        elif key.kind == "apikey":
            out.keys.append(api_key_from_item(user_id, raw))
        elif key.kind == "provider":
            out.providers.append(provider_from_item(raw))
        elif key.kind == "mind" and key.mind_id != DEFAULT_MIND:  # the default mind: not an export entry
            out.minds.append(mind_from_item(raw))
    out.sessions = list(sessions.values())
    return out


# --- everything, a record at a time (the export file) ------------------------------------------------


@dataclass(frozen=True)
class MindEntry:
    record: MindRecord
    identity: str | None


@dataclass(frozen=True)
class MemoryEntry:
    memory: Memory
    history: list[MemoryVersion]  # newest first


@dataclass(frozen=True)
class SessionEntry:
    mind_id: str
    session_id: str
    msg_count: int
    chunks: int


@dataclass(frozen=True)
class MessageEntry:
    mind_id: str
    session_id: str
    message: StoredMessage


@dataclass(frozen=True)
class SummaryEntry:
    mind_id: str
    session_id: str
    summary: Summary


Entry = (
    MindEntry
    | MemoryEntry
    | SessionEntry
    | MessageEntry
    | SummaryEntry
    | ApiKeyRecord
    | ProviderRecord
    | WebhookRecord
)


def stream(user_id: str) -> Iterator[Entry]:
    """Everything of a user, one record at a time and a page of the table at a time (an export of
    100k memories holds none of it whole): the minds (the default one first, with its identity
    line), each mind's memories with their history, its sessions, raw messages (within their TTL)
    and summaries; then API keys, provider keys and webhooks (the caller makes hints of them)."""
    pk, now = user_pk(user_id), int(utcnow().timestamp())
    stored = {m.mind_id: m for m in list_minds(user_id)}
    default = stored.pop(DEFAULT_MIND, None) or MindRecord(
        mind_id=DEFAULT_MIND, name=user_id, description=None, created_at=utcnow()
    )
    spaces = []
    for record in [default, *stored.values()]:
        space = Space(user_id, record.mind_id)
        spaces.append(space)
        yield MindEntry(record, get_identity(space)[0])
    for space in spaces:
        for memory, history in with_history(space):
            yield MemoryEntry(memory, history)
    for space in spaces:
        for item in db.query_prefix(pk, space.sk(SESSION)):
            raw = plain_item(item)
            yield SessionEntry(
                space.mind_id,
                parse_sk(raw["sk"]).session_id,
                int(raw.get("msg_count", 0)),
                int(raw.get("chunks", 0)),
            )
        for item in db.query_prefix(pk, space.sk(MESSAGE)):
            raw = plain_item(item)
            if int(raw.get("ttl", 0)) > now:
                key = parse_sk(raw["sk"])
                message = StoredMessage(key.seq, raw["role"], raw["content"], parse_iso(raw["created_at"]))
                yield MessageEntry(space.mind_id, key.session_id, message)
        for item in db.query_prefix(pk, space.sk(SUMMARY)):
            raw = plain_item(item)
            yield SummaryEntry(space.mind_id, parse_sk(raw["sk"]).session_id, summary_from_item(raw))
    yield from list_api_keys(user_id)
    yield from list_providers(user_id)
    yield from webhooks.list_all(user_id)


def delete_user(user_id: str) -> int:
    """Everything of a user: one query over the partition, batched deletes, and the API key lookups
    (which live outside the partition, under the key's hash); first the user's cached ingest answers
    (they hold memory texts); last the snapshots of every mind (after the minds' versions: a snapshot
    writer that read a mind before checks its version after writing) and the export files (after
    their records: an export writer that finishes meanwhile finds its record gone and deletes its
    file). Returns the number of items and objects deleted."""
    table = settings().idempotency_table
    cached = [
        {"id": item["id"], "sk": item["sk"]}
        for item in db.items(
            {
                "TableName": table,
                "KeyConditionExpression": "#id = :pk",
                "ExpressionAttributeNames": {"#id": "id", "#sk": "sk"},
                "ExpressionAttributeValues": {":pk": s(idempotency_pk(user_id))},
                "ProjectionExpression": "#id, #sk",
            }
        )
    ]
    db.batch_write([{"DeleteRequest": {"Key": k}} for k in cached], table)
    keys: list[dict[str, Any]] = []
    for item in db.query_prefix(user_pk(user_id), "", ProjectionExpression="pk, sk, key_hash"):
        keys.append({"pk": item["pk"], "sk": item["sk"]})
        if parse_sk(item["sk"]["S"]).kind == "apikey" and "key_hash" in item:
            keys.append(db.key(apikey_pk(item["key_hash"]["S"]), LOOKUP_SK))
    # the lookups go first: a half-finished deletion must never leave a working key behind
    keys.sort(key=lambda k: not k["pk"]["S"].startswith("key:"))
    db.batch_write([{"DeleteRequest": {"Key": k}} for k in keys])
    return len(cached) + len(keys) + snapshots.delete_user(user_id) + exports.delete_user(user_id)
