"""Webhook delivery, the delivery function's work (functions/webhook_delivery): an event from
MemoryBus fans out to the user's webhooks that ask for it (that user's only: the event's userId names
the one partition read), each delivery is signed with the Standard Webhooks reference library and
POSTed (urls.post: the guard again, the checked address, no redirects, 10 s), and a failed one waits
in the queue for its next attempt, growing waits for more than 24 hours, the same `webhook-id` on
every attempt. Each attempt is logged (status, a short excerpt at most); a webhook whose deliveries
have failed for 5 days is disabled."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from standardwebhooks.webhooks import Webhook

from synapse.aws import kms, queue
from synapse.core.config import settings
from synapse.core.errors import SynapseError
from synapse.core.models.base import iso, parse_iso, utcnow
from synapse.core.observability import logger
from synapse.services.webhooks import urls
from synapse.store import nuggets
from synapse.store.account import webhooks as store
from synapse.store.keys import Space

# the wait after attempt n (n = 1, 2, ...) in units of WEBHOOK_RETRY_BASE_SECONDS (30 s by default:
# 30 s, 2 min, 8 min, 32 min, 2.1 h, 8.5 h, 12 h, 12 h — 9 attempts over about 35 hours); a wait is
# at most 12 hours, the longest an SQS message can stay hidden
WAITS = (1, 4, 16, 64, 256, 1024, 1440, 1440)
MAX_WAIT = 43200
DISABLE_AFTER = timedelta(days=5)
USER_AGENT = "Synapse-Webhooks/1"


def wait_after(attempt: int) -> int | None:
    """Seconds before the attempt after `attempt`; None when `attempt` was the last."""
    if attempt < 1 or attempt > len(WAITS):
        return None
    return min(WAITS[attempt - 1] * settings().webhook_retry_base_seconds, MAX_WAIT)


def retry_window(base: int = 30) -> int:
    """Seconds from the first attempt to the last with this base (the README's "at least 24 h")."""
    return sum(min(w * base, MAX_WAIT) for w in WAITS)


@dataclass(frozen=True)
class Delivery:
    """One event for one webhook: a queue message. `body` is fixed at the first attempt (the memory as
    the change left it); each attempt signs it anew with its own timestamp."""

    user_id: str
    webhook_id: str
    event_id: str
    type: str
    body: str
    attempt: int  # the attempt this message makes when first received

    def to_message(self) -> dict[str, Any]:
        return {"kind": "delivery", **asdict(self)}

    @classmethod
    def from_message(cls, raw: Mapping[str, Any]) -> Delivery:
        return cls(
            user_id=str(raw["user_id"]),
            webhook_id=str(raw["webhook_id"]),
            event_id=str(raw["event_id"]),
            type=str(raw["type"]),
            body=str(raw["body"]),
            attempt=int(raw["attempt"]),
        )


def event_id(detail_type: str, detail: Mapping[str, Any]) -> str:
    """The `webhook-id` of an event: derived from what it is, so an event put on the bus twice (the
    stream's at-least-once) reaches a receiver with the same id and is dropped there as a repeat."""
    keys = ("userId", "mindId", "seq", "memoryId", "proposalId", "sessionId", "chunkId")
    named = [detail.get(k) for k in keys]
    digest = hashlib.sha256(json.dumps([detail_type, *named]).encode()).hexdigest()
    return f"msg_{digest[:32]}"


def payload(detail_type: str, at: datetime, data: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": detail_type, "timestamp": iso(at), "data": dict(data)}


def memory_as_left(space: Space, memory_id: str, version: int) -> dict[str, Any] | None:
    """The memory as the change left it, in GET /memory/{id}'s shape: the current memory if it is
    still at that version, else that version from its history laid over it; None if neither is kept."""
    found = nuggets.get(space, memory_id)
    if found is None:
        return None
    memory = found.memory
    if memory.version != version:
        kept = nuggets.kept_version(space, memory_id, version)
        if kept is None:
            return None
        fields = "content tags priority source verified confidence expires_at updated_at valid_at version"
        update = {f: getattr(kept, f) for f in fields.split()}
        memory = memory.model_copy(update=update)
    return memory.model_dump(mode="json")


def wanted(record: store.WebhookRecord, detail_type: str, detail: Mapping[str, Any]) -> bool:
    """Whether a webhook of the event's user takes this event."""
    if record.disabled_at is not None or record.user_id != detail.get("userId"):
        return False
    if record.mind_id is not None and record.mind_id != detail.get("mindId"):
        return False
    return not record.events or detail_type in record.events


def fan_out(event: Mapping[str, Any]) -> list[Delivery]:
    """An EventBridge event → one delivery per webhook of its user that takes it (first attempts)."""
    detail_type = str(event.get("detail-type", ""))
    detail = event.get("detail") or {}
    user_id = detail.get("userId")
    if not isinstance(user_id, str) or not user_id:
        return []
    hooks = [r for r in store.list_all(user_id) if wanted(r, detail_type, detail)]
    if not hooks:
        return []
    data = dict(detail)
    if detail_type.startswith("memory.") and detail_type != "memory.deleted" and detail.get("memoryId"):
        space = Space(user_id, str(detail.get("mindId") or "default"))
        data["memory"] = memory_as_left(space, str(detail["memoryId"]), int(detail.get("version") or 0))
    at = parse_iso(str(event["time"])) if event.get("time") else utcnow()
    body = json.dumps(payload(detail_type, at, data), separators=(",", ":"), ensure_ascii=False)
    eid = event_id(detail_type, detail)
    return [Delivery(user_id, r.webhook_id, eid, detail_type, body, 1) for r in hooks]


def sign(secret: str, delivery: Delivery, at: datetime) -> dict[str, str]:
    """The Standard Webhooks headers of one attempt, signed by the reference library."""
    signature = Webhook(secret).sign(delivery.event_id, at, delivery.body.encode())
    return {
        "webhook-id": delivery.event_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
        "User-Agent": USER_AGENT,
    }


@dataclass(frozen=True)
class Outcome:
    ok: bool
    again: bool  # a failure worth another attempt (the webhook still exists and is enabled)


def attempt(delivery: Delivery, number: int) -> Outcome:
    """Attempt `number` of a delivery: sign, POST, log, and keep the webhook's failure clock."""
    record = store.get(delivery.user_id, delivery.webhook_id)
    if record is None or (record.disabled_at is not None and delivery.type != "webhook.test"):
        return Outcome(ok=False, again=False)  # deleted or disabled since: nothing to deliver to
    now = utcnow()
    try:
        secret = kms.decrypt_webhook_secret(delivery.user_id, delivery.webhook_id, record.ciphertext)
    except kms.DecryptionRefused:
        logger.error("a webhook secret did not decrypt", extra={"webhook": delivery.webhook_id})
        return Outcome(ok=False, again=False)
    answer = urls.post(record.url, delivery.body.encode(), sign(secret, delivery, now))
    ok = answer.error is None
    last = wait_after(number) is None
    error = answer.error
    if not ok and last:
        error = f"{error} (the last attempt: given up)"
    store.log_attempt(
        delivery.user_id,
        delivery.webhook_id,
        store.AttemptRecord(delivery.event_id, delivery.type, number, answer.status_code, error, now),
    )
    if ok:
        if record.failing_since is not None:
            store.mark_success(delivery.user_id, delivery.webhook_id)
        return Outcome(ok=True, again=False)
    if record.failing_since is None:
        store.mark_failure(delivery.user_id, delivery.webhook_id, now)
    elif now - record.failing_since >= DISABLE_AFTER:
        store.disable(delivery.user_id, delivery.webhook_id, now)
        logger.warning("a webhook failed for 5 days and is disabled", extra={"webhook": delivery.webhook_id})
        return Outcome(ok=False, again=False)
    return Outcome(ok=False, again=not last)


def first_attempts(deliveries: Sequence[Delivery]) -> list[Delivery]:
    """Each delivery's first attempt, side by side (one slow receiver does not hold up the others);
    returns the deliveries to try again, as the messages of their second attempt."""
    if not deliveries:
        return []
    with ThreadPoolExecutor(max_workers=min(10, len(deliveries))) as pool:
        outcomes = list(pool.map(lambda d: attempt(d, d.attempt), deliveries))
    return [
        Delivery(d.user_id, d.webhook_id, d.event_id, d.type, d.body, d.attempt + 1)
        for d, o in zip(deliveries, outcomes, strict=True)
        if o.again
    ]


@dataclass(frozen=True)
class QueueMessage:
    """An SQS record as the delivery function receives it."""

    message_id: str
    receipt_handle: str
    body: str
    receive_count: int


def process(messages: Sequence[QueueMessage]) -> list[str]:
    """A batch of queue messages (events from MemoryBus, or deliveries to try again); returns the ids
    of the messages to receive again (a delivery whose next attempt waits, hidden that long; an event
    whose fan-out failed). Every other message is done and deleted."""
    failed: list[str] = []
    for message in messages:
        try:
            raw = json.loads(message.body)
        except ValueError:
            logger.error("skipped a queue message that is not JSON", extra={"message_id": message.message_id})
            continue
        try:
            if isinstance(raw, dict) and raw.get("kind") == "delivery":
                delivery = Delivery.from_message(raw)
                number = delivery.attempt + max(message.receive_count, 1) - 1
                if attempt(delivery, number).again:
                    queue.hide(message.receipt_handle, wait_after(number) or 0)
                    failed.append(message.message_id)
            elif isinstance(raw, dict) and "detail-type" in raw:
                again = first_attempts(fan_out(raw))
                if again:
                    queue.send([d.to_message() for d in again], delay=wait_after(1) or 0)
            else:
                logger.error("skipped a queue message of no kind known", extra={"id": message.message_id})
        except (SynapseError, BotoCoreError, ClientError, KeyError, TypeError, ValueError):
            # the store, KMS or the queue failed (or the message is malformed): SQS shows it again after
            # the queue's visibility timeout, and the dead-letter queue takes what keeps failing
            logger.exception("a webhook queue message failed", extra={"message_id": message.message_id})
            failed.append(message.message_id)
    return failed
