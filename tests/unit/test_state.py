"""Per-container state lives behind one reset (synapse.core.state), the one tests and benchmarks call."""

from __future__ import annotations

import pytest

from synapse.core import state
from synapse.core.config import settings
from synapse.search import cache, corpus
from synapse.services.account import providers
from synapse.store import nuggets


def test_one_reset_forgets_every_cache_of_the_container(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a container that has built its settings, a search corpus and a provider plaintext
    monkeypatch.setenv("SUMMARY_EVERY", "15")
    first = settings()
    cache.CACHE.put("alice", corpus.build(nuggets.columns([]), "v1", None))
    providers._cache[("alice", "digest")] = "plain"
    calls: list[int] = []

    @state.per_container
    def built() -> int:
        calls.append(1)
        return len(calls)

    assert built() == built() == 1
    # When the state is reset
    state.reset()
    # Then every one of them is built afresh
    assert settings() is not first
    assert cache.CACHE.stale("alice", None) is None
    assert not providers._cache
    assert built() == 2


def test_a_reset_can_keep_named_caches() -> None:
    # Given two per-container values
    @state.per_container
    def session() -> object:
        return object()

    @state.per_container
    def client() -> object:
        return object()

    kept, dropped = session(), client()
    # When the state is reset, keeping the first
    state.reset(keep=(session,))
    # Then the first is the same object and the second is built again
    assert session() is kept
    assert client() is not dropped
