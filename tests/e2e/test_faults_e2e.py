"""Faults over real HTTP: parallel ingests of one session, and a SIGKILL of the local server mid-load."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.e2e.conftest import ROOT, LocalServer

SUMMARY_EVERY = 15


def ingest_until_acknowledged(server: LocalServer, headers: dict[str, str], body: dict[str, Any]) -> int:
    """POST /memory/ingest as a well-behaved client: a 503 is retried after its Retry-After, and so is
    a connection refused or reset before any answer (ingest is idempotent; the local server's listen
    backlog is ThreadingHTTPServer's default of 5, which 20 simultaneous connects can overflow)."""
    for _ in range(10):
        try:
            resp = requests.post(f"{server.url}/memory/ingest", headers=headers, json=body, timeout=120)
        except requests.ConnectionError:
            time.sleep(0.5)
            continue
        if resp.status_code != 503:
            return resp.status_code
        assert int(resp.headers["Retry-After"]) > 0
        time.sleep(min(int(resp.headers["Retry-After"]), 2))
    return 503


@pytest.mark.slow
def test_twenty_parallel_ingests_of_one_session_count_exactly_and_summarize_once(
    local_server: LocalServer,
) -> None:
    # Given a fresh user and session, and 20 clients each sending 4 distinct messages at once
    headers = local_server.headers(local_server.make_jwt(f"par-{uuid.uuid4().hex[:8]}"))
    session = f"par-{uuid.uuid4().hex[:8]}"
    per, clients = 4, 20
    bodies = [
        {
            "sessionId": session,
            "messages": [
                {"role": "user", "content": f"Client {c} says point {i}: the release needs a changelog"}
                for i in range(per)
            ],
        }
        for c in range(clients)
    ]
    barrier = threading.Barrier(clients)

    def send(body: dict[str, Any]) -> int:
        barrier.wait(timeout=30)
        return ingest_until_acknowledged(local_server, headers, body)

    # When they all ingest in parallel
    with ThreadPoolExecutor(clients) as pool:
        statuses = list(pool.map(send, bodies))
    # Then every one is acknowledged, and the session counts every message exactly once
    assert statuses == [200] * clients, statuses
    # (they ran side by side: the ingest function's pool grew past one worker)
    assert "MemoryIngestFunction: cold start of worker" in local_server.logs()
    assert any(
        "MemoryIngestFunction: cold start" in line and "(pid" in line and "; 1 of at most" not in line
        for line in local_server.logs().splitlines()
    ), "the ingests never ran in parallel"
    total = per * clients
    export = requests.get(f"{local_server.url}/me/export", headers=headers, timeout=30).json()
    sessions = {s["session_id"]: s for s in export["sessions"]}
    assert sessions[session]["msg_count"] == total
    seqs = [m["seq"] for m in sessions[session].get("messages", [])]
    if seqs:  # the raw messages: one per sequence number, none lost, none twice
        assert sorted(seqs) == list(range(1, total + 1))
    # and every summary chunk is written exactly once (the bus delivers SessionSummaryDue locally)
    expected = [f"sum:{session}:chunk_{n}" for n in range(1, total // SUMMARY_EVERY + 1)]
    deadline = time.monotonic() + 90
    chunks: list[str] = []
    while time.monotonic() < deadline:
        resp = requests.get(f"{local_server.url}/memory/summaries/{session}", headers=headers, timeout=30)
        assert resp.status_code == 200
        chunks = [c["chunk_id"] for c in resp.json()["summaries"]]
        if len(chunks) >= len(expected):
            break
        time.sleep(0.5)
    time.sleep(2)  # late duplicate deliveries would show up now
    resp = requests.get(f"{local_server.url}/memory/summaries/{session}", headers=headers, timeout=30)
    chunks = [c["chunk_id"] for c in resp.json()["summaries"]]
    assert chunks == expected, chunks
    assert all(c["msg_count"] == SUMMARY_EVERY for c in resp.json()["summaries"])


@pytest.fixture
def crash_server(tmp_path: Path) -> Iterator[LocalServer]:
    """A local server of its own (it gets killed), on template.yaml."""
    server = LocalServer(tmp_path / "data", ROOT / "template.yaml")
    server.start()
    yield server
    server.stop()


@pytest.mark.slow
def test_every_write_acknowledged_before_a_sigkill_is_there_after_the_restart(
    crash_server: LocalServer,
) -> None:
    headers = crash_server.headers(crash_server.make_jwt("crash-user"))
    acknowledged: list[tuple[str, str]] = []  # (id, content)
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[str] = []

    def writer(w: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            content = f"writer {w} note {n}"
            body = {"category": "note", "key": f"w{w}_n{n}", "content": content, "tags": [f"w{w}"]}
            try:
                resp = requests.post(f"{crash_server.url}/memory", headers=headers, json=body, timeout=10)
            except requests.RequestException:
                continue  # the server is down: this write was never acknowledged
            if resp.status_code == 201:
                with lock:
                    acknowledged.append((resp.json()["id"], content))
            elif resp.status_code >= 500:
                errors.append(f"{resp.status_code} {resp.text[:200]}")

    # Given 6 writers running against the server
    threads = [threading.Thread(target=writer, args=(w,), daemon=True) for w in range(6)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while len(acknowledged) < 60 and time.monotonic() < deadline:
        time.sleep(0.1)
    # When the server is killed with SIGKILL mid-load (writers still running) and started again
    assert crash_server.proc is not None
    crash_server.proc.kill()
    crash_server.proc.wait(timeout=15)
    with lock:
        before_kill = list(acknowledged)
    stop.set()
    for t in threads:
        t.join(timeout=15)
    crash_server.proc = None
    crash_server.start()
    # Then every write acknowledged before the kill is there, with its content
    assert len(before_kill) >= 20, len(before_kill)
    listed: dict[str, str] = {}
    cursor = None
    while True:
        params = {"limit": "100", **({"cursor": cursor} if cursor else {})}
        page = requests.get(f"{crash_server.url}/memory", headers=headers, params=params, timeout=30).json()
        listed.update({m["id"]: m["content"] for m in page["memories"]})
        cursor = page.get("next_cursor")
        if not cursor:
            break
    missing = [(i, c) for i, c in before_kill if listed.get(i) != c]
    assert not missing, f"{len(missing)} of {len(before_kill)} acknowledged writes lost: {missing[:5]}"
    for mem_id, content in before_kill[-5:]:
        got = requests.get(f"{crash_server.url}/memory/{mem_id}", headers=headers, timeout=30)
        assert got.status_code == 200 and got.json()["content"] == content
    assert not errors, errors[:5]
