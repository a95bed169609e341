from typing import Any
import pytest
from synapse import memories, recall, store
from synapse.models import Category, MemoryIn
from synapse.principal import ALL_SCOPES, Principal
from tests.integration.test_incremental_corpus import fake_vector, MODEL_KEY

def test_dbg(aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memories, "embed_document", fake_vector)
    monkeypatch.setattr(recall, "settings", lambda: type("S", (), {"recall_cache": True})())
    c = recall._CorpusCache(10_000)
    monkeypatch.setattr(recall, "CACHE", c)
    who = Principal("bob", "user", frozenset(ALL_SCOPES))
    memories.put(who, MemoryIn(category=Category.fact, key="k1", content="coffee"))
    sp = store.Space("bob")
    a = recall.load_corpus(sp, MODEL_KEY); print("A", a.at, len(a))
    memories.put(who, MemoryIn(category=Category.fact, key="k2", content="tea"))
    v = store.get_version(sp); print("ver", v, store.changed_ids(sp, a.at, v))
    b = recall.load_corpus(sp, MODEL_KEY); print("B", b is a, b.at, len(b))
