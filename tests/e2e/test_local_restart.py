"""`make run` right after a stop: a new server waits (bounded) for the old one to release DATA_DIR."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from local.spawn import server_env
from tests.e2e.conftest import E2E_JWT_SECRET, FIXTURE_TEMPLATE, ROOT, LocalServer, free_port

AUTH = {"Authorization": "Bearer user:bob"}


@pytest.fixture
def held_lock(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """DATA_DIR with its lock held by this process, as a server that is still shutting down holds it."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    fd = os.open(data_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        yield data_dir, fd
    finally:
        os.close(fd)


def _wait_for(predicate, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_a_server_started_right_after_a_sigterm_waits_for_the_old_one_then_serves(tmp_path: Path) -> None:
    # Given a running server with a stored item, and a slow request in flight
    old = LocalServer(tmp_path / "data", FIXTURE_TEMPLATE)
    old.start()
    new: LocalServer | None = None
    try:
        assert requests.put(f"{old.url}/items/k1", headers=AUTH, data="kept", timeout=10).status_code == 201
        assert requests.get(f"{old.url}/tools", timeout=30).status_code == 200  # warm
        slow: dict[str, int] = {}

        def slow_request() -> None:
            resp = requests.get(f"{old.url}/tools", params={"do": "sleep", "seconds": "4"}, timeout=60)
            slow["status"] = resp.status_code

        t = threading.Thread(target=slow_request)
        t.start()
        time.sleep(0.5)
        # When it gets SIGTERM and a new server is started at once on the same DATA_DIR and port
        assert old.proc is not None
        old_proc = old.proc
        old_proc.send_signal(signal.SIGTERM)
        new = LocalServer(old.data_dir, FIXTURE_TEMPLATE)
        new.port, new.url, new.log_path = old.port, old.url, tmp_path / "new-server.log"
        new.start()
        # Then the new one waited for the old one, which finished its request and exited cleanly
        t.join(timeout=30)
        assert slow.get("status") == 200
        assert old_proc.wait(timeout=30) == 0
        assert "waiting up to 30 s for it to stop" in new.logs()
        # and it serves the old one's data
        got = requests.get(f"{new.url}/items/k1", headers=AUTH, timeout=10)
        assert got.status_code == 200 and got.json()["value"] == "kept"
    finally:
        if new is not None:
            new.stop()
        old.stop(kill=True)


def test_a_waiting_server_starts_as_soon_as_the_data_dir_is_released(
    held_lock: tuple[Path, int], tmp_path: Path
) -> None:
    data_dir, fd = held_lock
    server = LocalServer(data_dir, FIXTURE_TEMPLATE)
    errors: list[BaseException] = []

    def start() -> None:
        try:
            server.start()
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=start)
    t.start()
    try:
        # Given a new server waiting for DATA_DIR (it says so)
        assert _wait_for(lambda: "waiting up to 30 s" in server.logs(), 60), server.logs()
        # When the lock is released
        fcntl.flock(fd, fcntl.LOCK_UN)
        released = time.monotonic()
        t.join(timeout=60)
        # Then it starts and serves
        assert not errors, errors
        assert time.monotonic() - released < 30
        assert requests.get(f"{server.url}/health", timeout=10).status_code == 200
    finally:
        t.join(timeout=60)
        server.stop()


def _run(data_dir: Path, **extra: str) -> subprocess.Popen[bytes]:
    env = server_env(free_port(), str(data_dir), E2E_JWT_SECRET, **extra)
    return subprocess.Popen(
        [sys.executable, "-m", "local", "--template", str(FIXTURE_TEMPLATE)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def test_past_its_wait_a_new_server_gives_up_with_a_clear_message(held_lock: tuple[Path, int]) -> None:
    data_dir, _ = held_lock
    proc = _run(data_dir, LOCAL_DATA_DIR_WAIT_SECONDS="1")
    out, _ = proc.communicate(timeout=60)
    text = out.decode()
    assert proc.returncode == 1, text
    assert "waiting up to 1 s for it to stop" in text
    assert f"error: another local server is using {data_dir.resolve()} (waited 1 s for it to stop)" in text
    assert "Traceback" not in text


def test_a_server_waiting_for_data_dir_stops_on_sigterm(held_lock: tuple[Path, int]) -> None:
    data_dir, _ = held_lock
    proc = _run(data_dir)
    assert proc.stdout is not None
    seen = b""
    while b"waiting up to 30 s" not in seen:
        line = proc.stdout.readline()
        assert line, seen.decode()
        seen += line
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=15)
    assert proc.returncode == 1
    assert "stopped while waiting for" in out.decode()
