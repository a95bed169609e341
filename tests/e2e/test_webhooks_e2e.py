"""Webhooks through the local server: a receiver registered over HTTP gets each write, signed so that
the reference library verifies it; a receiver that fails for a while then recovers gets every event
(the same webhook-id on each attempt); the test route; the delivery log over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from standardwebhooks.webhooks import Webhook

from harness.receiver import Receiver, running_receiver
from tests.e2e.conftest import ROOT, LocalServer


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    # the first retry after 1 s (then 4 s, 16 s ...), so that a recovery is seen within a test
    srv = LocalServer(
        tmp_path_factory.mktemp("local-webhooks") / "data",
        ROOT / "template.yaml",
        extra_env={"WEBHOOK_RETRY_BASE_SECONDS": "1"},
    )
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as rec:
        yield rec


def register(server: LocalServer, token: str, url: str, **body: Any) -> dict[str, Any]:
    answer = requests.post(
        f"{server.url}/webhooks", headers=server.headers(token), json={"url": url, **body}, timeout=10
    )
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


def write(server: LocalServer, token: str, key: str, content: str) -> dict[str, Any]:
    answer = requests.post(
        f"{server.url}/memory",
        headers=server.headers(token),
        json={"category": "fact", "key": key, "content": content},
        timeout=30,
    )
    assert answer.status_code in (200, 201), answer.text
    return dict(answer.json())


def test_a_write_reaches_the_receiver_signed(server: LocalServer, receiver: Receiver) -> None:
    # Given a user with a webhook on a receiver of this machine
    token = server.make_jwt("hook-alice")
    hook = register(server, token, receiver.url)
    # When the user writes a memory
    memory = write(server, token, "city", "Lives in Chiang Mai")
    # Then the receiver gets one delivery, which the reference library verifies
    (got,) = receiver.wait_for(1, timeout=30)
    payload = Webhook(hook["secret"]).verify(got.body, got.headers)
    assert payload["type"] == "memory.created"
    assert (
        payload["data"]["memoryId"] == memory["id"]
        and payload["data"]["memory"]["content"] == "Lives in Chiang Mai"
    )
    # And the delivery log says so
    log = requests.get(
        f"{server.url}/webhooks/{hook['webhook_id']}/deliveries", headers=server.headers(token), timeout=10
    ).json()["deliveries"]
    assert [(d["type"], d["attempt"], d["status_code"]) for d in log] == [("memory.created", 1, 200)]


def test_another_users_write_does_not_reach_the_receiver(server: LocalServer, receiver: Receiver) -> None:
    register(server, server.make_jwt("hook-carol"), receiver.url)
    write(server, server.make_jwt("hook-dave"), "pet", "Has a cat")
    assert receiver.wait_for(1, timeout=3) == []


def test_a_receiver_down_then_up_gets_every_event(server: LocalServer, receiver: Receiver) -> None:
    # Given a webhook whose receiver answers 500 for now
    token = server.make_jwt("hook-bob")
    hook = register(server, token, receiver.url)
    receiver.status = 500
    # When five memories are written, and the receiver recovers after their first attempts
    for i in range(5):
        write(server, token, f"fact_{i}", f"Fact number {i}")
    failed = receiver.wait_for(5, timeout=30)
    receiver.status = 200
    # Then every event arrives (retries after 1 s), each verified, none lost (a retry may come in
    # before the last first attempt: what was asked before the switch is counted, not assumed)
    deadline_requests = receiver.wait_for(len(failed) + 5, timeout=40)
    verify = Webhook(hook["secret"])
    ok = deadline_requests[len(failed) :]
    assert len(ok) >= 5
    delivered = {r.headers["webhook-id"]: verify.verify(r.body, r.headers) for r in ok}
    every_id = {r.headers["webhook-id"] for r in deadline_requests}
    # the retries carry the ids of the failed attempts, and sorted by seq they are the writes in order
    assert set(delivered) == every_id and len(every_id) == 5
    seqs = sorted(p["data"]["seq"] for p in delivered.values())
    contents = [
        p["data"]["memory"]["content"] for p in sorted(delivered.values(), key=lambda p: p["data"]["seq"])
    ]
    assert len(set(seqs)) == 5 and contents == [f"Fact number {i}" for i in range(5)]


def test_the_test_route_sends_a_signed_test(server: LocalServer, receiver: Receiver) -> None:
    token = server.make_jwt("hook-erin")
    hook = register(server, token, receiver.url)
    answer = requests.post(
        f"{server.url}/webhooks/{hook['webhook_id']}/test", headers=server.headers(token), timeout=10
    )
    assert answer.status_code == 202
    (got,) = receiver.wait_for(1, timeout=30)
    assert Webhook(hook["secret"]).verify(got.body, got.headers)["type"] == "webhook.test"
    listed = requests.get(f"{server.url}/webhooks", headers=server.headers(token), timeout=10).json()
    assert [w["webhook_id"] for w in listed["webhooks"]] == [hook["webhook_id"]]
    assert "secret" not in json.dumps(listed)
