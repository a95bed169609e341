"""The Gemini REST double as a pytest fixture (the double itself is local/gemini_double.py, which the
benchmarks use too)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from local.gemini_double import *  # noqa: F403
from local.gemini_double import GeminiDouble


def _clear_synapse_caches() -> None:
    from synapse.core import state

    state.reset()


@contextlib.contextmanager
def running_double(monkeypatch: pytest.MonkeyPatch) -> Iterator[GeminiDouble]:
    """A running double, with the environment pointing the real client at it and fast retries.

    Sets GEMINI_API_KEY (fake), GEMINI_BASE_URL, GEMINI_TIMEOUT_MS=1000, GEMINI_ATTEMPTS=3 and tiny
    retry delays; clears the settings and client caches before and after.
    """
    double = GeminiDouble().start()
    monkeypatch.setenv("GEMINI_API_KEY", "test-fake-gemini-key")
    monkeypatch.setenv("GEMINI_BASE_URL", double.base_url)
    monkeypatch.setenv("GEMINI_TIMEOUT_MS", "1000")
    monkeypatch.setenv("GEMINI_ATTEMPTS", "3")
    monkeypatch.setenv("GEMINI_RETRY_INITIAL_DELAY", "0.01")
    monkeypatch.setenv("GEMINI_RETRY_MAX_DELAY", "0.05")
    _clear_synapse_caches()
    try:
        yield double
    finally:
        double.stop()
        _clear_synapse_caches()


@pytest.fixture
def gemini_double(monkeypatch: pytest.MonkeyPatch) -> Iterator[GeminiDouble]:
    """The double as a fixture: `from tests.gemini_double import gemini_double` in a conftest."""
    with running_double(monkeypatch) as double:
        yield double
