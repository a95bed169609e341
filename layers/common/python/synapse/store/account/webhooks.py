"""Webhooks: a registration per item in the user's partition (`webhook:<id>`: url, events, mind, the
secret's KMS ciphertext, failing_since, disabled_at), and each webhook's delivery log (`whd:<id>:...`,
kept 7 days by the table's TTL)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from synapse.core.errors import NotFound
from synapse.core.models.base import iso, parse_iso
from synapse.core.models.webhooks import EventType, WebhookInfo
from synapse.store import db
from synapse.store.codec import plain_item, s
from synapse.store.keys import WEBHOOK, delivery_prefix, delivery_sk, user_pk, webhook_sk

NO_WEBHOOK = "No webhook with that id."
LOG_DAYS = 7  # a delivery log entry is kept this long


@dataclass(frozen=True)
class WebhookRecord:
    webhook_id: str
    user_id: str
    url: str
    events: tuple[str, ...]  # empty: every type
    mind_id: str | None  # None: every mind
    ciphertext: bytes
    created_at: datetime
    failing_since: datetime | None = None
    disabled_at: datetime | None = None


def put(record: WebhookRecord) -> None:
    item: dict[str, Any] = {
        **db.key(user_pk(record.user_id), webhook_sk(record.webhook_id)),
        "webhook_id": s(record.webhook_id),
        "url": s(record.url),
        "events": {"L": [s(e) for e in record.events]},
        "ciphertext": {"B": record.ciphertext},
        "created_at": s(iso(record.created_at)),
    }
    if record.mind_id is not None:
        item["mind_id"] = s(record.mind_id)
    with db.translate():
        db.client().put_item(TableName=db.table(), Item=item, ConditionExpression="attribute_not_exists(sk)")


def from_item(user_id: str, raw: Mapping[str, Any]) -> WebhookRecord:
    """A webhook item as plain values → its record."""
    return WebhookRecord(
        webhook_id=raw["webhook_id"],
        user_id=user_id,
        url=raw["url"],
        events=tuple(raw.get("events", [])),
        mind_id=raw.get("mind_id"),
        ciphertext=bytes(raw.get("ciphertext", b"")),
        created_at=parse_iso(raw["created_at"]),
        failing_since=parse_iso(raw["failing_since"]) if raw.get("failing_since") else None,
        disabled_at=parse_iso(raw["disabled_at"]) if raw.get("disabled_at") else None,
    )


def info(record: WebhookRecord) -> WebhookInfo:
    """What the owner sees of a webhook: never its secret."""
    return WebhookInfo(
        webhook_id=record.webhook_id,
        url=record.url,
        events=list(record.events) or [e.value for e in EventType],
        mind_id=record.mind_id,
        created_at=record.created_at,
        disabled_at=record.disabled_at,
    )


def list_all(user_id: str) -> list[WebhookRecord]:
    """A user's webhooks (of that user's partition only: another user's cannot be read here)."""
    return [from_item(user_id, plain_item(item)) for item in db.query_prefix(user_pk(user_id), WEBHOOK)]


def get(user_id: str, webhook_id: str) -> WebhookRecord | None:
    item = db.get(user_pk(user_id), webhook_sk(webhook_id))
    return from_item(user_id, plain_item(item)) if item else None


def delete(user_id: str, webhook_id: str) -> None:
    """The registration goes at once (deliveries still queued find nothing and stop); its log is left
    to the TTL."""
    try:
        with db.translate():
            db.client().delete_item(
                TableName=db.table(),
                Key=db.key(user_pk(user_id), webhook_sk(webhook_id)),
                ConditionExpression="attribute_exists(sk)",
            )
    except ClientError as exc:
        if db.is_condition_failure(exc):
            raise NotFound(NO_WEBHOOK) from exc
        raise


def _update(user_id: str, webhook_id: str, expression: str, values: dict[str, Any] | None = None) -> None:
    kwargs: dict[str, Any] = {
        "TableName": db.table(),
        "Key": db.key(user_pk(user_id), webhook_sk(webhook_id)),
        "UpdateExpression": expression,
        "ConditionExpression": "attribute_exists(sk)",
    }
    if values:
        kwargs["ExpressionAttributeValues"] = values
    try:
        with db.translate():
            db.client().update_item(**kwargs)
    except ClientError as exc:
        if not db.is_condition_failure(exc):
            raise  # a deleted webhook has nothing to mark


def mark_success(user_id: str, webhook_id: str) -> None:
    _update(user_id, webhook_id, "REMOVE failing_since")


def mark_failure(user_id: str, webhook_id: str, at: datetime) -> None:
    """The first failure since the last success starts the clock (a later one keeps it)."""
    _update(
        user_id,
        webhook_id,
        "SET failing_since = if_not_exists(failing_since, :at)",
        {":at": s(iso(at))},
    )


def disable(user_id: str, webhook_id: str, at: datetime) -> None:
    _update(user_id, webhook_id, "SET disabled_at = :at", {":at": s(iso(at))})


# --- the delivery log -------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttemptRecord:
    event_id: str
    type: str
    attempt: int
    status_code: int | None
    error: str | None
    at: datetime


def log_attempt(user_id: str, webhook_id: str, attempt: AttemptRecord) -> None:
    at_ms = int(attempt.at.timestamp() * 1000)
    item: dict[str, Any] = {
        **db.key(user_pk(user_id), delivery_sk(webhook_id, at_ms, secrets.token_hex(4))),
        "event_id": s(attempt.event_id),
        "type": s(attempt.type),
        "attempt": {"N": str(attempt.attempt)},
        "at": s(iso(attempt.at)),
        "ttl": {"N": str(int(time.time()) + LOG_DAYS * 86400)},
    }
    if attempt.status_code is not None:
        item["status_code"] = {"N": str(attempt.status_code)}
    if attempt.error is not None:
        item["error"] = s(attempt.error)
    with db.translate():
        db.client().put_item(TableName=db.table(), Item=item)


def attempts(user_id: str, webhook_id: str, limit: int) -> list[AttemptRecord]:
    """The latest attempts, newest first."""
    out: list[AttemptRecord] = []
    for item in db.query_prefix(
        user_pk(user_id), delivery_prefix(webhook_id), ScanIndexForward=False, Limit=limit
    ):
        raw = plain_item(item)
        out.append(
            AttemptRecord(
                event_id=raw["event_id"],
                type=raw["type"],
                attempt=int(raw["attempt"]),
                status_code=int(raw["status_code"]) if raw.get("status_code") is not None else None,
                error=raw.get("error"),
                at=parse_iso(raw["at"]),
            )
        )
        if len(out) >= limit:
            break
    return out
