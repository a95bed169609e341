"""Conversations of a mind: sessions, raw messages, ingest markers, summaries, the identity line."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from synapse.core.models.base import iso, parse_iso, utcnow
from synapse.store import changelog, db
from synapse.store.codec import n, plain_item, s
from synapse.store.keys import (
    IDENTITY,
    MESSAGE,
    Space,
    chunk_id,
    marker_sk,
    message_sk,
    parse_sk,
    session_sk,
    summary_prefix,
    summary_sk,
)


@dataclass(frozen=True)
class StoredMessage:
    seq: int
    role: str
    content: str
    created_at: datetime


@dataclass(frozen=True)
class MessageRange:
    """The sequence numbers one ingest gave its raw messages: first..last (inclusive)."""

    first: int
    last: int
    replayed: bool  # True when this exact request had already stored them (a retry)


@dataclass(frozen=True)
class Summary:
    chunk_id: str
    summary: str
    msg_count: int
    created_at: datetime


def _get(space: Space, local_sk: str, projection: str | None = None) -> dict[str, Any] | None:
    item = db.get(space.pk, space.sk(local_sk), projection)
    return plain_item(item) if item else None


def append_messages(
    space: Space,
    session_id: str,
    messages: Sequence[tuple[str, str]],
    *,
    request_id: str,
    now: datetime,
    ttl_days: int,
    marker_ttl_seconds: int = 3600,
) -> MessageRange:
    """Store one ingest's raw messages and count them into the session, atomically and once.

    One transaction: the session's count moves from the value read to +n (optimistic: a parallel
    ingest of the same session makes us re-read and retry), the messages take the sequence numbers
    in between, and a marker of this request (`request_id`) makes a retry of it find its range
    instead of storing the messages twice.
    """
    count_n = len(messages)
    expires = int(now.timestamp()) + ttl_days * 86400
    marker = space.sk(marker_sk(session_id, request_id))
    for attempt in range(50):
        found = _get(space, marker_sk(session_id, request_id))
        # a marker past its ttl is no retry: DynamoDB deletes expired items late (hours, even days)
        if found is not None and int(found.get("ttl", 0)) > now.timestamp():
            return MessageRange(first=int(found["first"]), last=int(found["last"]), replayed=True)
        session = _get(space, session_sk(session_id), "msg_count")
        count = int(session["msg_count"]) if session else 0
        first, last = count + 1, count + count_n
        condition = (
            {
                "ConditionExpression": "msg_count = :count",
                "ExpressionAttributeValues": {":count": n(count), ":new": n(last), ":now": s(iso(now))},
            }
            if session
            else {
                # no count yet; the item may exist all the same (POST /memory/summarize made it)
                "ConditionExpression": "attribute_not_exists(msg_count)",
                "ExpressionAttributeValues": {":new": n(last), ":now": s(iso(now))},
            }
        )
        actions: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": db.table(),
                    "Key": db.key(space.pk, space.sk(session_sk(session_id))),
                    "UpdateExpression": "SET msg_count = :new, updated_at = :now",
                    **condition,
                }
            },
            {
                "Put": {
                    "TableName": db.table(),
                    "Item": {
                        **db.key(space.pk, marker),
                        "first": n(first),
                        "last": n(last),
                        "ttl": n(int(now.timestamp()) + marker_ttl_seconds),
                    },
                    "ConditionExpression": "attribute_not_exists(sk) OR #ttl <= :now_s",
                    "ExpressionAttributeNames": {"#ttl": "ttl"},
                    "ExpressionAttributeValues": {":now_s": n(int(now.timestamp()))},
                }
            },
        ]
        for i, (role, content) in enumerate(messages):
            actions.append(
                {
                    "Put": {
                        "TableName": db.table(),
                        "Item": {
                            **db.key(space.pk, space.sk(message_sk(session_id, first + i))),
                            "role": s(role),
                            "content": s(content),
                            "created_at": s(iso(now)),
                            "ttl": n(expires),
                        },
                    }
                }
            )
        if db.won(actions):
            return MessageRange(first=first, last=last, replayed=False)
        db.backoff(attempt)  # another ingest of this session won the race: read again
    raise db.busy()


def read_messages(space: Space, session_id: str, first: int, last: int) -> list[StoredMessage]:
    """Raw messages first..last of a session that are within their TTL (DynamoDB deletes expired
    items late, so an expired message may still be in the table: it is not read)."""
    kwargs: dict[str, Any] = {
        "TableName": db.table(),
        "KeyConditionExpression": "pk = :pk AND sk BETWEEN :a AND :b",
        "FilterExpression": "#ttl > :now",
        "ExpressionAttributeNames": {"#ttl": "ttl"},
        "ExpressionAttributeValues": {
            ":pk": s(space.pk),
            ":a": s(space.sk(message_sk(session_id, max(first, 0)))),
            ":b": s(space.sk(message_sk(session_id, last))),
            ":now": n(int(utcnow().timestamp())),
        },
        "ConsistentRead": True,
    }
    found: list[StoredMessage] = []
    for item in db.items(kwargs):
        raw = plain_item(item)
        found.append(
            StoredMessage(
                seq=parse_sk(raw["sk"]).seq,
                role=raw["role"],
                content=raw["content"],
                created_at=parse_iso(raw["created_at"]),
            )
        )
    return found


def recent_messages(space: Space, session_id: str, n: int) -> list[StoredMessage]:
    """The session's last `n` stored messages within their TTL, oldest first: a query newest first,
    `n` items a page (one page unless expired messages DynamoDB has not swept yet are among them)."""
    if n <= 0:
        return []
    items = db.query_prefix(
        space.pk,
        space.sk(f"{MESSAGE}{session_id}:"),
        ScanIndexForward=False,
        Limit=n,
        ConsistentRead=True,
    )
    now = int(utcnow().timestamp())
    found: list[StoredMessage] = []
    for item in items:
        raw = plain_item(item)
        if int(raw.get("ttl", 0)) > now:
            found.append(
                StoredMessage(
                    seq=parse_sk(raw["sk"]).seq,
                    role=raw["role"],
                    content=raw["content"],
                    created_at=parse_iso(raw["created_at"]),
                )
            )
        if len(found) >= n:
            break
    return found[::-1]


def latest_summary(space: Space, session_id: str) -> Summary | None:
    """The session's newest summary chunk (one item read)."""
    items = db.query_prefix(space.pk, space.sk(summary_prefix(session_id)), ScanIndexForward=False, Limit=1)
    for item in items:
        return summary_from_item(plain_item(item))
    return None


def session_count(space: Space, session_id: str) -> int:
    session = _get(space, session_sk(session_id), "msg_count")
    return int(session["msg_count"]) if session else 0


def add_summary(
    space: Space,
    session_id: str,
    *,
    summary: str,
    msg_count: int,
    now: datetime,
    boundary: int | None = None,
) -> Summary | None:
    """Write the session's next chunk (numbered from 1 in write order).

    With `boundary` (the message count an EventBridge event names), at most one chunk is ever
    written for it, however often the event arrives: None is returned for a repeat.
    """
    for attempt in range(50):
        session = _get(space, session_sk(session_id), "chunks, boundaries")
        chunks = int(session.get("chunks", 0)) if session else 0
        done = {int(b) for b in (session or {}).get("boundaries", [])}
        if boundary is not None and boundary in done:
            return None
        number = chunks + 1
        values: dict[str, Any] = {":n": n(number), ":now": s(iso(now))}
        if session is not None and "chunks" in session:
            condition, values[":c"] = "chunks = :c", n(chunks)
        else:
            condition = "attribute_not_exists(chunks)"
        update = "SET chunks = :n, updated_at = :now"
        if boundary is not None:
            update += " ADD boundaries :b"
            values[":b"] = {"NS": [str(boundary)]}
        sk = summary_sk(session_id, number)
        # the chunk takes the mind's next change-log seq too: its `summary.created` event comes from
        # the entry the stream carries, in order with the mind's memory events
        said = [changelog.Change.summary(session_id, chunk_id(sk))]
        actions: list[dict[str, Any]] = [
            *changelog.step(space, changelog.read(space), said),
            {
                "Update": {
                    "TableName": db.table(),
                    "Key": db.key(space.pk, space.sk(session_sk(session_id))),
                    "UpdateExpression": update,
                    "ConditionExpression": condition,
                    "ExpressionAttributeValues": values,
                }
            },
            {
                "Put": {
                    "TableName": db.table(),
                    "Item": {
                        **db.key(space.pk, space.sk(sk)),
                        "summary": s(summary),
                        "msg_count": n(msg_count),
                        "created_at": s(iso(now)),
                    },
                    "ConditionExpression": "attribute_not_exists(sk)",
                }
            },
        ]
        if db.won(actions):
            return Summary(chunk_id=chunk_id(sk), summary=summary, msg_count=msg_count, created_at=now)
        db.backoff(attempt)  # another writer of this session won the race: read again
    raise db.busy()


def session_boundary_done(space: Space, session_id: str, boundary: int) -> bool:
    session = _get(space, session_sk(session_id), "boundaries")
    return boundary in {int(b) for b in (session or {}).get("boundaries", [])}


def summary_from_item(raw: dict[str, Any]) -> Summary:
    """A summary item as plain values → Summary (its public chunk id, whatever the mind)."""
    return Summary(
        chunk_id=parse_sk(raw["sk"]).name,
        summary=raw["summary"],
        msg_count=int(raw["msg_count"]),
        created_at=parse_iso(raw["created_at"]),
    )


def list_summaries(space: Space, session_id: str) -> list[Summary]:
    items = db.query_prefix(space.pk, space.sk(summary_prefix(session_id)))
    return [summary_from_item(plain_item(item)) for item in items]


def get_identity(space: Space) -> tuple[str | None, int | None]:
    """The stored identity line and when it goes stale (epoch seconds; None: never by itself)."""
    item = db.get(space.pk, space.sk(IDENTITY), "#t, stale_at", {"#t": "text"}, consistent=False)
    if not item:
        return None, None
    stale_at = item.get("stale_at")
    return str(item["text"]["S"]), int(stale_at["N"]) if stale_at else None


def put_identity(space: Space, text: str | None, now: datetime, *, stale_at: int | None = None) -> None:
    key = db.key(space.pk, space.sk(IDENTITY))
    with db.translate():
        if text:
            item = {**key, "text": s(text), "updated_at": s(iso(now))}
            if stale_at is not None:
                item["stale_at"] = n(stale_at)
            db.client().put_item(TableName=db.table(), Item=item)
        else:
            db.client().delete_item(TableName=db.table(), Key=key)
