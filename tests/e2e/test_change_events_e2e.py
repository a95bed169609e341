"""Change events through the local server: writes over HTTP → the emulated stream → the change-events
function → MemoryBus → a rule's target; a kill -9 with writes and deliveries in flight loses none;
and the pull feed over HTTP.

The events' target is a test function added to template.yaml (a copy, beside symlinks to the
project's functions and layer): it appends each event it receives to a file, slowly, so that
deliveries are still queued when the server is killed.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from local.template import load_yaml
from tests.e2e.conftest import ROOT, LocalServer

RECEIVER = '''"""The rule's target in these tests: appends each event it receives to EVENTS_FILE."""

import json
import os
import time


def handler(event, context):
    time.sleep(float(os.environ.get("RECEIVER_DELAY", "0")))
    with open(os.environ["EVENTS_FILE"], "a", encoding="utf-8") as fh:
        fh.write(json.dumps(event) + "\\n")
'''


def events_template(root: Path, events_file: Path, delay: float) -> Path:
    """template.yaml plus a function with a rule on MemoryBus for every change event, in `root`."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("functions", "layers"):
        (root / name).symlink_to(ROOT / name, target_is_directory=True)
    (root / "receiver").mkdir()
    (root / "receiver" / "app.py").write_text(RECEIVER, encoding="utf-8")
    raw = load_yaml(ROOT / "template.yaml")
    raw["Resources"]["EventsReceiverFunction"] = {
        "Type": "AWS::Serverless::Function",
        "Properties": {
            "CodeUri": "receiver/",
            "Handler": "app.handler",
            "Environment": {"Variables": {"EVENTS_FILE": str(events_file), "RECEIVER_DELAY": str(delay)}},
            "Events": {
                "Changes": {
                    "Type": "EventBridgeRule",
                    "Properties": {
                        "EventBusName": {"Ref": "MemoryBus"},
                        "Pattern": {
                            "source": ["synapse.memory"],
                            "detail-type": [{"prefix": "memory."}, "summary.created", "mind.deleted"],
                        },
                        "RetryPolicy": {"MaximumRetryAttempts": 5},
                    },
                }
            },
        },
    }
    path = root / "template.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


class Receiver:
    def __init__(self, path: Path) -> None:
        self.path = path

    def events(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line torn by a kill
        return out

    def seen(self) -> set[tuple[str, str, int, str | None]]:
        """What a receiver dedupes by: (userId, mindId, seq, memoryId)."""
        return {
            (e["detail"]["userId"], e["detail"]["mindId"], e["detail"]["seq"], e["detail"].get("memoryId"))
            for e in self.events()
        }

    def wait_for(self, wanted: set[tuple[str, str, int, str | None]], timeout: float = 120) -> set[Any]:
        """Wait until every key wanted has arrived; returns those still missing."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            missing = wanted - self.seen()
            if not missing:
                return set()
            time.sleep(0.25)
        return wanted - self.seen()


@pytest.fixture
def server_with_receiver(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[LocalServer, Receiver]]:
    delay = float(getattr(request, "param", 0.0))
    events_file = tmp_path / "events.jsonl"
    template = events_template(tmp_path / "root", events_file, delay)
    server = LocalServer(tmp_path / "data", template)
    server.start()
    yield server, Receiver(events_file)
    server.stop()


def feed_all(server: LocalServer, headers: dict[str, str], limit: int = 100) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    after = 0
    while True:
        page = requests.get(
            f"{server.url}/memory/changes",
            headers=headers,
            params={"after": after, "limit": limit},
            timeout=30,
        )
        assert page.status_code == 200, page.text
        rows += page.json()["changes"]
        if page.json()["next_after"] == after:
            return rows
        after = page.json()["next_after"]


@pytest.mark.slow
def test_every_change_reaches_a_rule_on_memory_bus(
    server_with_receiver: tuple[LocalServer, Receiver],
) -> None:
    server, receiver = server_with_receiver
    uid = f"ev-{uuid.uuid4().hex[:8]}"
    headers = server.headers(server.make_jwt(uid))
    # Given a memory created, updated, verified and deleted, a summary, and a mind created and deleted
    body = {"category": "fact", "key": "home", "content": "Lives in Lisbon"}
    mid = requests.post(f"{server.url}/memory", headers=headers, json=body, timeout=30).json()["id"]
    requests.post(
        f"{server.url}/memory", headers=headers, json={**body, "content": "Lives in Porto"}, timeout=30
    )
    assert requests.post(f"{server.url}/memory/{mid}/verify", headers=headers, timeout=30).status_code == 200
    assert requests.delete(f"{server.url}/memory/{mid}", headers=headers, timeout=30).status_code == 204
    talk = {"sessionId": "chat-1", "messages": [{"role": "user", "content": "We planned the Lisbon trip"}]}
    chunk = requests.post(f"{server.url}/memory/summarize", headers=headers, json=talk, timeout=60).json()[
        "chunk_id"
    ]
    mind = requests.post(f"{server.url}/minds", headers=headers, json={"name": "work"}, timeout=30).json()[
        "mind_id"
    ]
    assert requests.delete(f"{server.url}/minds/{mind}", headers=headers, timeout=30).status_code == 204
    # When the events are delivered
    wanted = {(uid, "default", s, mid) for s in (1, 2, 3, 4)} | {
        (uid, "default", 5, None),
        (uid, mind, 1, None),
    }
    assert not receiver.wait_for(wanted, timeout=60)
    # Then the rule's target got each as an EventBridge event with the contract's detail, in seq order
    mine = sorted(
        (e for e in receiver.events() if e["detail"]["userId"] == uid), key=lambda e: e["detail"]["seq"]
    )
    assert all(e["source"] == "synapse.memory" and re.match(r"\d{4}-\d\d-\d\dT", e["time"]) for e in mine)
    base = {"userId": uid, "mindId": "default"}
    assert [(e["detail-type"], e["detail"]) for e in mine if e["detail"]["mindId"] == "default"] == [
        ("memory.created", {**base, "seq": 1, "memoryId": mid, "version": 1, "change": "created"}),
        ("memory.updated", {**base, "seq": 2, "memoryId": mid, "version": 2, "change": "updated"}),
        ("memory.verified", {**base, "seq": 3, "memoryId": mid, "version": 3, "change": "verified"}),
        ("memory.deleted", {**base, "seq": 4, "memoryId": mid, "version": 3, "change": "deleted"}),
        ("summary.created", {**base, "seq": 5, "sessionId": "chat-1", "chunkId": chunk}),
    ]
    assert [(e["detail-type"], e["detail"]) for e in mine if e["detail"]["mindId"] == mind] == [
        ("mind.deleted", {"userId": uid, "mindId": mind, "seq": 1})
    ]


@pytest.mark.slow
@pytest.mark.parametrize("server_with_receiver", [0.05], indirect=True)
def test_a_kill_mid_stream_loses_no_committed_changes_event(
    server_with_receiver: tuple[LocalServer, Receiver],
) -> None:
    server, receiver = server_with_receiver
    uid = f"kill-{uuid.uuid4().hex[:8]}"
    headers = server.headers(server.make_jwt(uid))
    acknowledged: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(w: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            body = {"category": "note", "key": f"w{w}_n{n}", "content": f"writer {w} note {n}"}
            try:
                resp = requests.post(f"{server.url}/memory", headers=headers, json=body, timeout=10)
            except requests.RequestException:
                continue  # the server is down: never acknowledged
            if resp.status_code == 201:
                with lock:
                    acknowledged.append(resp.json()["id"])

    # Given four writers running, and a rule target slower than they are (deliveries queue up)
    threads = [threading.Thread(target=writer, args=(w,), daemon=True) for w in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(acknowledged) < 40 and time.monotonic() < deadline:
        time.sleep(0.05)
    # When the server is killed with SIGKILL, writes and deliveries in flight, and started again
    assert server.proc is not None
    server.proc.kill()
    server.proc.wait(timeout=15)
    stop.set()
    for t in threads:
        t.join(timeout=15)
    delivered_before = len(receiver.seen())
    server.proc = None
    server.start()
    # Then the kill was mid-stream: the restart had journaled records or events still to deliver...
    assert re.search(
        r"queues: [1-9]\d* stream records and events journaled before the restart", server.logs()
    )
    # ...every acknowledged write is a committed change in the feed (the table's own log)...
    rows = feed_all(server, headers)
    committed = {(uid, "default", r["seq"], r["memory_id"]) for r in rows}
    assert {m for *_, m in committed} >= set(acknowledged)
    assert len(acknowledged) >= 40 and delivered_before < len(committed)
    # ...and every committed change's event reaches the rule's target after the restart, and no other
    missing = receiver.wait_for(committed, timeout=180)
    assert not missing, (
        f"{len(missing)} of {len(committed)} committed changes have no event: {sorted(missing)[:5]}"
    )
    arrived = {k for k in receiver.seen() if k[0] == uid}
    assert arrived == committed


# --- the pull feed over HTTP ------------------------------------------------------------------------


def test_the_feed_over_http_pages_isolates_and_answers_410(local_server: LocalServer) -> None:
    uid = f"feed-{uuid.uuid4().hex[:8]}"
    headers = local_server.headers(local_server.make_jwt(uid))
    url = local_server.url
    ids = []
    for i in range(5):
        body = {"category": "fact", "key": f"k{i}", "content": f"note {i}"}
        ids.append(requests.post(f"{url}/memory", headers=headers, json=body, timeout=30).json()["id"])
    mind = requests.post(f"{url}/minds", headers=headers, json={"name": "work"}, timeout=30).json()["mind_id"]
    body = {"category": "fact", "key": "desk", "content": "Sits by the window"}
    desk = requests.post(
        f"{url}/memory", headers={**headers, "x-mind-id": mind}, json=body, timeout=30
    ).json()["id"]
    # Paging two at a time: every change once, in order, next_after moving on
    rows = feed_all(local_server, headers, limit=2)
    assert [(r["seq"], r["memory_id"], r["change"], r["version"]) for r in rows] == [
        (i + 1, ids[i], "created", 1) for i in range(5)
    ]
    # A position the mind never had is 410 gone, in the envelope
    gone = requests.get(f"{url}/memory/changes", headers=headers, params={"after": 99}, timeout=30)
    assert gone.status_code == 410
    assert gone.json()["error"]["code"] == "gone" and gone.json()["error"]["message"]
    # The other mind's feed is its own, and another user's holds nothing of this one
    assert [r["memory_id"] for r in feed_all(local_server, {**headers, "x-mind-id": mind})] == [desk]
    other = local_server.headers(local_server.make_jwt(f"other-{uuid.uuid4().hex[:8]}"))
    assert feed_all(local_server, other) == []
    # A Mind Key of the other mind reads that mind's feed, and is refused the default mind's
    made = requests.post(
        f"{url}/keys",
        headers=headers,
        json={"name": "work", "scopes": ["memory:read"], "mind_id": mind},
        timeout=30,
    )
    assert made.status_code == 201, made.text
    key = {"Authorization": f"Bearer {made.json()['key']}"}
    assert [r["memory_id"] for r in feed_all(local_server, key)] == [desk]
    refused = requests.get(f"{url}/memory/changes", headers={**key, "x-mind-id": "default"}, timeout=30)
    assert refused.status_code == 403
    # And the route is in the OpenAPI document with its 410
    doc = requests.get(f"{url}/openapi.json", timeout=30).json()
    answers = doc["paths"]["/memory/changes"]["get"]["responses"]
    assert {"200", "401", "403", "404", "410", "422", "429", "500", "503"} <= set(answers)
