"""The routes of /webhooks: register (the secret shown once, KMS-encrypted under the webhooks' own
key), list, delete, send a test, read the delivery log."""

from __future__ import annotations

import base64
import json
import secrets
import string

from synapse.aws import kms, queue
from synapse.core.config import settings
from synapse.core.errors import NotFound, QuotaExceeded, ValidationFailed
from synapse.core.models.base import utcnow
from synapse.core.models.webhooks import (
    TEST_EVENT,
    DeliveryAttempt,
    DeliveryList,
    WebhookCreated,
    WebhookIn,
    WebhookList,
)
from synapse.services.account import minds
from synapse.services.webhooks import urls
from synapse.services.webhooks.delivery import Delivery, payload
from synapse.store.account import webhooks as store
from synapse.store.keys import DEFAULT_MIND

_ID_CHARS = string.ascii_lowercase + string.digits


def new_webhook_id() -> str:
    return "wh_" + "".join(secrets.choice(_ID_CHARS) for _ in range(16))


def new_secret() -> str:
    """`whsec_` + base64 of 32 random bytes (Standard Webhooks: 24 to 64 bytes)."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def create(user_id: str, body: WebhookIn) -> WebhookCreated:
    try:
        urls.check(body.url, registering=True)
    except urls.UnsafeUrl as exc:
        raise ValidationFailed.at(["body", "url"], str(exc)) from exc
    if body.mind_id is not None and body.mind_id != DEFAULT_MIND:
        minds.check_exists(user_id, body.mind_id)
    limit = settings().max_webhooks
    if len(store.list_all(user_id)) >= limit:
        # counted before the write: two registrations racing past the last slot may both land
        raise QuotaExceeded(f"A user may register {limit} webhooks at most (MAX_WEBHOOKS); delete one first.")
    webhook_id = new_webhook_id()
    secret = new_secret()
    record = store.WebhookRecord(
        webhook_id=webhook_id,
        user_id=user_id,
        url=body.url,
        events=tuple(e.value for e in body.events or ()),
        mind_id=body.mind_id,
        ciphertext=kms.encrypt_webhook_secret(user_id, webhook_id, secret),
        created_at=utcnow(),
    )
    store.put(record)
    info = store.info(record)
    return WebhookCreated(
        webhook_id=webhook_id,
        url=info.url,
        events=info.events,
        mind_id=info.mind_id,
        secret=secret,
        created_at=info.created_at,
    )


def list_all(user_id: str) -> WebhookList:
    hooks = sorted(store.list_all(user_id), key=lambda r: r.created_at)
    return WebhookList(webhooks=[store.info(r) for r in hooks])


def _require(user_id: str, webhook_id: str) -> store.WebhookRecord:
    record = store.get(user_id, webhook_id) if webhook_id.startswith("wh_") else None
    if record is None:
        raise NotFound(store.NO_WEBHOOK)
    return record


def delete(user_id: str, webhook_id: str) -> None:
    _require(user_id, webhook_id)
    store.delete(user_id, webhook_id)


def send_test(user_id: str, webhook_id: str) -> None:
    """Queue a `webhook.test` delivery; the delivery function signs and sends it like any other."""
    _require(user_id, webhook_id)
    now = utcnow()
    data = {"userId": user_id, "webhookId": webhook_id}
    message = Delivery(
        user_id=user_id,
        webhook_id=webhook_id,
        event_id="msg_test_" + secrets.token_hex(12),
        type=TEST_EVENT,
        body=json.dumps(payload(TEST_EVENT, now, data), separators=(",", ":")),
        attempt=1,
    )
    queue.send([message.to_message()])


def deliveries(user_id: str, webhook_id: str, limit: int) -> DeliveryList:
    _require(user_id, webhook_id)
    return DeliveryList(
        deliveries=[
            DeliveryAttempt(
                event_id=a.event_id,
                type=a.type,
                attempt=a.attempt,
                status_code=a.status_code,
                error=a.error,
                at=a.at,
            )
            for a in store.attempts(user_id, webhook_id, limit)
        ]
    )
