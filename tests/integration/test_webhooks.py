"""Webhooks against moto (DynamoDB, KMS, SQS): registration and its guard, the secret only delivery
can read, deliveries signed as the reference library verifies, retries through the queue with the
same webhook-id, the delivery log, disabling after 5 days, and isolation across users and minds."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from standardwebhooks.webhooks import Webhook

from harness.lambdas import ALICE, LambdaContext, load_function
from harness.receiver import Receiver, running_receiver
from synapse.core.config import settings
from synapse.core.models.base import iso, utcnow
from synapse.services.memory.changes import events_of
from synapse.services.webhooks import delivery
from synapse.store import changelog
from synapse.store.account import webhooks as store
from synapse.store.keys import Space
from tests.conftest import TABLE, Call

BOB = {**ALICE, "userId": "bob"}


@pytest.fixture
def local_receivers(monkeypatch: pytest.MonkeyPatch, aws: Any) -> Iterator[None]:
    """Receivers on loopback allowed (the local run's setting), and the first retry after 1 s."""
    monkeypatch.setenv("LOCAL_WEBHOOK_ALLOW_PRIVATE", "true")
    monkeypatch.setenv("WEBHOOK_RETRY_BASE_SECONDS", "1")
    settings.cache_clear()
    yield
    settings.cache_clear()


@pytest.fixture
def receiver(local_receivers: None) -> Iterator[Receiver]:
    with running_receiver() as rec:
        yield rec


def register(call: Call, url: str, who: dict[str, str] = ALICE, **body: Any) -> dict[str, Any]:
    answer = call("webhooks_create", "POST", "/webhooks", body={"url": url, **body}, who=who)
    assert answer["statusCode"] == 201, answer
    return answer["json"]


def bus_events(user_id: str = "alice", mind_id: str = "default") -> list[dict[str, Any]]:
    """The EventBridge events of every change-log entry of a mind, as the rule puts them in the queue."""
    space = Space(user_id, mind_id)
    out = []
    for entry in changelog.after(space, 0, 1000).entries:
        for kind, detail, at in events_of(space, entry):
            out.append(
                {
                    "version": "0",
                    "id": str(uuid.uuid4()),
                    "detail-type": kind,
                    "source": "synapse.memory",
                    "time": iso(at),
                    "detail": detail,
                }
            )
    return out


def sqs_event(bodies: list[tuple[str, str, int]]) -> dict[str, Any]:
    """(message id, body, receive count) → the event Lambda's SQS event source hands the function."""
    return {
        "Records": [
            {
                "messageId": mid,
                "receiptHandle": f"rh-{mid}",
                "body": body,
                "eventSource": "aws:sqs",
                "attributes": {"ApproximateReceiveCount": str(count)},
                "messageAttributes": {},
            }
            for mid, body, count in bodies
        ]
    }


def run_events(events: list[dict[str, Any]]) -> dict[str, Any]:
    fn = load_function("webhook_delivery")
    result: dict[str, Any] = fn.handler(
        sqs_event([(str(i), json.dumps(e), 1) for i, e in enumerate(events)]), LambdaContext()
    )
    return result


def queued(wait: int = 3) -> list[dict[str, Any]]:
    """Messages waiting in the webhook queue (received: hidden for the queue's visibility timeout)."""
    sqs = boto3.client("sqs")
    answer = sqs.receive_message(
        QueueUrl=settings().webhook_queue_url,
        MaxNumberOfMessages=10,
        WaitTimeSeconds=wait,
        AttributeNames=["ApproximateReceiveCount"],
    )
    return answer.get("Messages", [])


def run_queued(messages: list[dict[str, Any]]) -> dict[str, Any]:
    fn = load_function("webhook_delivery")
    event = {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "eventSource": "aws:sqs",
                "attributes": dict(m.get("Attributes") or {}),
                "messageAttributes": {},
            }
            for m in messages
        ]
    }
    result: dict[str, Any] = fn.handler(event, LambdaContext())
    return result


def write_memory(
    call: Call, key: str = "city", content: str = "Lives in Lisbon", who: dict[str, str] = ALICE
) -> str:
    answer = call(
        "memory_create", "POST", "/memory", body={"category": "fact", "key": key, "content": content}, who=who
    )
    assert answer["statusCode"] in (200, 201), answer  # 200: the key existed (an update)
    return str(answer["json"]["id"])


# --- registration ------------------------------------------------------------------------------------


def test_a_webhook_is_registered_its_secret_shown_once_and_stored_encrypted(call: Call, aws: Any) -> None:
    # When alice registers a webhook for one mind's creations
    created = register(call, "https://93.184.215.14/hook", events=["memory.created"])
    # Then the answer has the secret (whsec_ + base64), and the listing never does
    assert created["secret"].startswith("whsec_") and created["events"] == ["memory.created"]
    listed = call("webhooks_list", "GET", "/webhooks", who=ALICE)["json"]["webhooks"]
    assert [w["webhook_id"] for w in listed] == [created["webhook_id"]]
    assert "secret" not in listed[0] and listed[0]["disabled_at"] is None
    # And the table holds a ciphertext, never the secret itself
    items = aws.scan(TableName=TABLE)["Items"]
    assert created["secret"] not in json.dumps(items, default=str)
    record = store.get("alice", created["webhook_id"])
    assert record is not None and record.ciphertext


@pytest.mark.parametrize(
    "url",
    [
        "http://93.184.215.14/hook",
        "https://127.0.0.1/hook",
        "https://169.254.169.254/latest",
        "https://[::1]/",
    ],
)
def test_a_url_that_is_not_https_to_a_public_address_is_422_and_nothing_is_stored(
    call: Call, aws: Any, url: str
) -> None:
    answer = call("webhooks_create", "POST", "/webhooks", body={"url": url}, who=ALICE)
    assert answer["statusCode"] == 422, answer
    assert answer["json"]["error"]["code"] == "validation_error"
    assert store.list_all("alice") == []


def test_past_max_webhooks_is_409_quota_exceeded(
    call: Call, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAX_WEBHOOKS", "2")
    settings.cache_clear()
    register(call, "https://93.184.215.14/a")
    register(call, "https://93.184.215.14/b")
    answer = call("webhooks_create", "POST", "/webhooks", body={"url": "https://93.184.215.14/c"}, who=ALICE)
    assert answer["statusCode"] == 409
    assert (
        answer["json"]["error"]["code"] == "quota_exceeded"
        and "MAX_WEBHOOKS" in answer["json"]["error"]["message"]
    )
    assert len(store.list_all("alice")) == 2


def test_an_unknown_mind_is_404(call: Call, aws: Any) -> None:
    answer = call(
        "webhooks_create",
        "POST",
        "/webhooks",
        body={"url": "https://93.184.215.14/a", "mind_id": "m_0123456789ab"},
        who=ALICE,
    )
    assert answer["statusCode"] == 404


def test_another_users_webhook_cannot_be_deleted_tested_or_read(call: Call, aws: Any) -> None:
    hook = register(call, "https://93.184.215.14/hook")["webhook_id"]
    route = {"route": "/webhooks/{webhookId}", "path_params": {"webhookId": hook}}
    assert call("webhooks_delete", "DELETE", f"/webhooks/{hook}", who=BOB, **route)["statusCode"] == 404
    test_route = {"route": "/webhooks/{webhookId}/test", "path_params": {"webhookId": hook}}
    assert call("webhooks_test", "POST", f"/webhooks/{hook}/test", who=BOB, **test_route)["statusCode"] == 404
    log_route = {"route": "/webhooks/{webhookId}/deliveries", "path_params": {"webhookId": hook}}
    assert (
        call("webhooks_deliveries", "GET", f"/webhooks/{hook}/deliveries", who=BOB, **log_route)["statusCode"]
        == 404
    )
    assert call("webhooks_delete", "DELETE", f"/webhooks/{hook}", who=ALICE, **route)["statusCode"] == 204
    assert call("webhooks_delete", "DELETE", f"/webhooks/{hook}", who=ALICE, **route)["statusCode"] == 404


# --- delivery ----------------------------------------------------------------------------------------


def test_a_write_is_delivered_signed_with_the_memory_as_it_was_left(call: Call, receiver: Receiver) -> None:
    # Given a webhook, and a memory written then updated
    hook = register(call, receiver.url)
    mem_id = write_memory(call, content="Lives in Lisbon")
    write_memory(call, content="Lives in Porto")
    # When the events of both writes reach the delivery function
    result = run_events(bus_events())
    assert result == {"batchItemFailures": []}
    # Then the receiver got two deliveries that the reference library verifies
    got = receiver.wait_for(2)
    assert len(got) == 2
    payloads = [Webhook(hook["secret"]).verify(r.body, r.headers) for r in got]
    by_type = {p["type"]: p for p in payloads}
    created, updated = by_type["memory.created"], by_type["memory.updated"]
    # each carrying the memory as that change left it (the first version from its history)
    assert (
        created["data"]["memory"]["content"] == "Lives in Lisbon"
        and created["data"]["memory"]["version"] == 1
    )
    assert (
        updated["data"]["memory"]["content"] == "Lives in Porto" and updated["data"]["memory"]["version"] == 2
    )
    assert created["data"]["memoryId"] == mem_id and created["data"]["seq"] < updated["data"]["seq"]
    # And the delivery log shows both attempts as successes
    log_route = {
        "route": "/webhooks/{webhookId}/deliveries",
        "path_params": {"webhookId": hook["webhook_id"]},
    }
    log = call(
        "webhooks_deliveries", "GET", f"/webhooks/{hook['webhook_id']}/deliveries", who=ALICE, **log_route
    )
    assert {(d["attempt"], d["status_code"], d["error"]) for d in log["json"]["deliveries"]} == {
        (1, 200, None)
    }


def test_a_failed_delivery_is_retried_from_the_queue_with_the_same_id(call: Call, receiver: Receiver) -> None:
    # Given a receiver that fails
    hook = register(call, receiver.url)
    write_memory(call)
    receiver.status, receiver.answer = 500, b"database on fire " * 50
    # When the event is delivered
    assert run_events(bus_events()) == {"batchItemFailures": []}
    first = receiver.wait_for(1)[0]
    # Then a second attempt waits in the queue (after the first wait)
    (retry,) = queued()
    body = json.loads(retry["Body"])
    assert (
        body["kind"] == "delivery"
        and body["attempt"] == 2
        and body["event_id"] == first.headers["webhook-id"]
    )
    # When the receiver is back and the retry comes round
    receiver.status = 200
    assert run_queued([retry]) == {"batchItemFailures": []}
    second = receiver.wait_for(2)[1]
    # Then it carries the same webhook-id and body, signed anew, and verifies
    assert second.headers["webhook-id"] == first.headers["webhook-id"] and second.body == first.body
    Webhook(hook["secret"]).verify(second.body, second.headers)
    # And the log has both attempts, the failure with a short excerpt only
    attempts = store.attempts("alice", hook["webhook_id"], 10)
    assert [(a.attempt, a.status_code) for a in attempts] == [(2, 200), (1, 500)]
    assert attempts[1].error is not None and attempts[1].error.startswith("HTTP 500: database on fire")
    assert len(attempts[1].error) <= 220
    # and the failure clock was started, then cleared by the success
    record = store.get("alice", hook["webhook_id"])
    assert record is not None and record.failing_since is None


def test_a_retry_that_fails_again_is_hidden_until_its_next_attempt(call: Call, receiver: Receiver) -> None:
    register(call, receiver.url)
    write_memory(call)
    receiver.status = 503
    run_events(bus_events())
    (retry,) = queued()
    # When the retry fails too: the function reports it failed (SQS keeps it) and hides it 4 waits
    result = run_queued([retry])
    assert result == {"batchItemFailures": [{"itemIdentifier": retry["MessageId"]}]}
    assert queued(wait=1) == []  # hidden: WAITS[1] = 4 × the base (1 s here)
    # And it comes back when that wait is over (not after the queue's own 30 s visibility timeout)
    (again,) = queued(wait=8)
    assert again["MessageId"] == retry["MessageId"] and again["Attributes"]["ApproximateReceiveCount"] == "2"


def test_a_webhook_failing_for_5_days_is_disabled_and_gets_nothing_more(
    call: Call, receiver: Receiver
) -> None:
    hook = register(call, receiver.url)
    store.mark_failure("alice", hook["webhook_id"], utcnow() - timedelta(days=5, minutes=1))
    write_memory(call)
    receiver.status = 500
    run_events(bus_events())
    record = store.get("alice", hook["webhook_id"])
    assert record is not None and record.disabled_at is not None
    assert queued(wait=2) == []  # no retry of a disabled webhook
    listed = call("webhooks_list", "GET", "/webhooks", who=ALICE)["json"]["webhooks"]
    assert listed[0]["disabled_at"] is not None
    # When another write happens, Then nothing is sent
    receiver.status = 200
    write_memory(call, key="job", content="Works as a nurse")
    run_events(bus_events()[-1:])
    assert len(receiver.requests) == 1


def test_the_test_route_queues_a_signed_webhook_test(call: Call, receiver: Receiver) -> None:
    hook = register(call, receiver.url)
    hid = hook["webhook_id"]
    answer = call(
        "webhooks_test",
        "POST",
        f"/webhooks/{hid}/test",
        who=ALICE,
        route="/webhooks/{webhookId}/test",
        path_params={"webhookId": hid},
    )
    assert answer["statusCode"] == 202
    assert run_queued(queued()) == {"batchItemFailures": []}
    (got,) = receiver.wait_for(1)
    payload = Webhook(hook["secret"]).verify(got.body, got.headers)
    assert payload["type"] == "webhook.test" and payload["data"]["webhookId"] == hid


def test_a_deleted_webhook_gets_no_retry(call: Call, receiver: Receiver) -> None:
    hook = register(call, receiver.url)
    write_memory(call)
    receiver.status = 500
    run_events(bus_events())
    (retry,) = queued()
    store.delete("alice", hook["webhook_id"])
    assert run_queued([retry]) == {"batchItemFailures": []}
    assert len(receiver.requests) == 1


# --- isolation ---------------------------------------------------------------------------------------

USERS = ["u1", "u2", "u3"]
MINDS = ["default", "m_aaaaaaaaaaaa", "m_bbbbbbbbbbbb"]
TYPES = ["memory.created", "memory.deleted", "summary.created"]


@hsettings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    hooks=st.lists(
        st.tuples(
            st.sampled_from(USERS),
            st.one_of(st.none(), st.sampled_from(MINDS)),
            st.one_of(st.none(), st.lists(st.sampled_from(TYPES), min_size=1, max_size=2)),
        ),
        max_size=8,
    ),
    event=st.tuples(st.sampled_from(USERS), st.sampled_from(MINDS), st.sampled_from(TYPES)),
)
def test_an_event_reaches_only_its_users_webhooks_that_ask_for_it(
    aws: Any, hooks: list[tuple[str, str | None, list[str] | None]], event: tuple[str, str, str]
) -> None:
    # Given webhooks of several users, for one mind or all, for some types or all (fresh users each time)
    run = uuid.uuid4().hex[:8]
    expected = set()
    for i, (user, mind, types) in enumerate(hooks):
        record = store.WebhookRecord(
            webhook_id=f"wh_{run}{i:08d}",
            user_id=f"{user}-{run}",
            url="https://93.184.215.14/h",
            events=tuple(types or ()),
            mind_id=mind,
            ciphertext=b"x",
            created_at=utcnow(),
        )
        store.put(record)
        if user == event[0] and mind in (None, event[1]) and (not types or event[2] in types):
            expected.add(record.webhook_id)
    # When an event of one user's mind fans out
    user, mind, kind = event
    detail = {"userId": f"{user}-{run}", "mindId": mind, "seq": 1, "sessionId": "s1", "chunkId": "c1"}
    if kind.startswith("memory."):
        detail.update(memoryId=str(uuid.uuid4()), version=1, change=kind.split(".")[1])
    deliveries = delivery.fan_out({"detail-type": kind, "detail": detail, "time": iso(utcnow())})
    # Then exactly that user's webhooks for that mind (or every mind) and that type get it
    assert {d.webhook_id for d in deliveries} == expected
    assert all(d.user_id == f"{user}-{run}" for d in deliveries)
