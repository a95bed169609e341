"""Plaintext provider keys are cached per container, but only a bounded number of them (no AWS)."""

from __future__ import annotations

import pytest

from synapse.aws import kms as secrets
from synapse.core.models.base import utcnow
from synapse.services.account import providers
from synapse.store.account import credentials


def test_the_plaintext_cache_keeps_the_most_recently_used_keys_only(monkeypatch: pytest.MonkeyPatch) -> None:
    decrypted: list[str] = []

    def record(user_id: str, provider: str) -> credentials.ProviderRecord:
        return credentials.ProviderRecord(
            provider=provider, ciphertext=f"ct-{user_id}".encode(), hint="AIza…xxxx", updated_at=utcnow()
        )

    def decrypt(user_id: str, provider: str, ciphertext: bytes) -> str:
        decrypted.append(user_id)
        return f"key-of-{user_id}"

    monkeypatch.setattr(credentials, "get_provider", record)
    monkeypatch.setattr(secrets, "decrypt", decrypt)
    monkeypatch.setattr(providers, "_cache", type(providers._cache)())
    # Given more users than the cache holds, with u0 used again along the way
    for i in range(providers._CACHE_SIZE + 50):
        assert providers.gemini_key_for(f"u{i}") == f"key-of-u{i}"
        providers.gemini_key_for("u0")
    # Then the cache stays bounded, u0 (recently used) is still cached, the oldest others are not
    assert len(providers._cache) == providers._CACHE_SIZE
    assert decrypted.count("u0") == 1
    providers.gemini_key_for("u1")
    assert decrypted.count("u1") == 2
