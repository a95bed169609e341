"""Webhook deliveries' signatures and schedule (services/webhooks/delivery.py), against the Standard
Webhooks reference library."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from synapse.core.models.base import utcnow
from synapse.services.webhooks import delivery, registry


def a_delivery(
    body: str = '{"type":"memory.created","timestamp":"2026-12-04T10:00:00Z","data":{"seq":1}}',
) -> delivery.Delivery:
    return delivery.Delivery("alice", "wh_0123456789abcdef", "msg_abc", "memory.created", body, 1)


def test_the_headers_verify_with_the_reference_library() -> None:
    secret = registry.new_secret()
    d = a_delivery()
    headers = delivery.sign(secret, d, utcnow())
    assert Webhook(secret).verify(d.body.encode(), headers) == json.loads(d.body)
    assert headers["webhook-id"] == "msg_abc"


def test_another_secret_or_a_changed_body_does_not_verify() -> None:
    secret = registry.new_secret()
    d = a_delivery()
    headers = delivery.sign(secret, d, utcnow())
    with pytest.raises(WebhookVerificationError):
        Webhook(registry.new_secret()).verify(d.body.encode(), headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(d.body.replace('"seq":1', '"seq":2').encode(), headers)


def test_the_secret_is_whsec_and_32_bytes() -> None:
    import base64

    secret = registry.new_secret()
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) == 32


def test_an_events_id_is_the_same_whenever_it_is_put_again() -> None:
    detail = {"userId": "alice", "mindId": "default", "seq": 7, "memoryId": "m1", "version": 2}
    assert delivery.event_id("memory.updated", detail) == delivery.event_id("memory.updated", dict(detail))
    assert delivery.event_id("memory.updated", detail) != delivery.event_id(
        "memory.updated", {**detail, "seq": 8}
    )
    assert delivery.event_id("memory.updated", detail) != delivery.event_id("memory.verified", detail)


def test_retries_wait_longer_each_time_for_more_than_24_hours() -> None:
    waits = [delivery.wait_after(n) for n in range(1, len(delivery.WAITS) + 2)]
    assert waits[-1] is None  # the last attempt has no next
    numbers = [w for w in waits if w is not None]
    assert numbers == sorted(numbers) and numbers[0] == 30 and max(numbers) <= 43200
    assert delivery.retry_window(30) >= 24 * 3600
    assert sum(numbers) == delivery.retry_window(30)


def test_a_webhook_takes_its_users_events_of_its_mind_and_types_only() -> None:
    from synapse.store.account.webhooks import WebhookRecord

    hook = WebhookRecord(
        "wh_x", "alice", "https://h", ("memory.created",), "m_aaaaaaaaaaaa", b"", datetime.now(UTC)
    )
    detail = {"userId": "alice", "mindId": "m_aaaaaaaaaaaa"}
    assert delivery.wanted(hook, "memory.created", detail)
    assert not delivery.wanted(hook, "memory.updated", detail)
    assert not delivery.wanted(hook, "memory.created", {**detail, "mindId": "default"})
    assert not delivery.wanted(hook, "memory.created", {**detail, "userId": "bob"})
