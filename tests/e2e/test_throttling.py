"""API-wide throttling from the template's DefaultRouteSettings: 429 rate_limited in the envelope."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from local.runtime import TokenBucket
from tests.e2e.conftest import LocalServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def throttled_server(tmp_path: Path) -> Iterator[LocalServer]:
    server = LocalServer(
        tmp_path / "data",
        ROOT / "template.yaml",
        extra_env={"LOCAL_THROTTLE": "1", "THROTTLING_RATE_LIMIT": "0.5", "THROTTLING_BURST_LIMIT": "3"},
    )
    server.start()
    yield server
    server.stop()


def test_past_the_burst_the_api_answers_429_in_the_envelope(throttled_server: LocalServer) -> None:
    # Given a burst of 3 and half a request a second (the fixture's readiness probe took some)
    answers = [requests.get(f"{throttled_server.url}/health", timeout=10) for _ in range(5)]
    statuses = [a.status_code for a in answers]
    # Then at most the burst passes, and everything after is refused, with a Retry-After
    passed = statuses.count(200)
    assert 1 <= passed <= 3 and statuses == [200] * passed + [429] * (5 - passed)
    refused = answers[-1]
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "rate_limited"
    assert int(refused.headers["Retry-After"]) >= 1


def test_the_bucket_refills_at_its_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr("local.runtime.time.monotonic", lambda: clock[0])
    bucket = TokenBucket(rate=2.0, burst=2)
    assert [bucket.take() for _ in range(3)] == [True, True, False]
    clock[0] += 0.5  # one token back
    assert [bucket.take(), bucket.take()] == [True, False]
