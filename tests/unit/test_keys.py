"""Sort keys and the public ids built from them (no AWS)."""

from __future__ import annotations

import pytest

from synapse.core.errors import NotFound
from synapse.core.models.memory import MemoryPatch
from synapse.core.principal import Principal
from synapse.services.memory import memories
from synapse.store import credentials, db, keys, nuggets
from synapse.store.keys import Space
from synapse.store.minds import Mind


@pytest.mark.parametrize(
    ("session", "n", "public"),
    [("s1", 1, "sum:s1:chunk_1"), ("chat_2026_12", 12, "sum:chat_2026_12:chunk_12"), ("a.b-c", 9999, None)],
)
def test_a_chunk_id_is_its_sort_key_without_the_padding(session: str, n: int, public: str | None) -> None:
    sk = keys.summary_sk(session, n)
    assert keys.chunk_id(sk) == (public or f"sum:{session}:chunk_{n}")


def test_summary_keys_sort_in_write_order() -> None:
    # the padding is what makes DynamoDB's byte order the chunks' order
    sks = [keys.summary_sk("s", n) for n in (1, 2, 9, 10, 11, 100)]
    assert sorted(sks) == sks
    assert [keys.chunk_id(k) for k in sks] == [f"sum:s:chunk_{n}" for n in (1, 2, 9, 10, 11, 100)]


def test_ids_of_a_shape_the_service_never_makes_are_not_found_without_asking_dynamodb(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # an oversized key would make DynamoDB answer a ValidationException (a 500): never sent
    class NoClient:
        def __call__(self) -> None:
            raise AssertionError("DynamoDB was called")

        def cache_clear(self) -> None:  # state.reset() clears the real one's cache
            pass

    monkeypatch.setattr(db, "client", NoClient())
    alice = Principal(user_id="alice", kind="user", scopes=frozenset({"memory:read", "memory:write"}))
    space = Space("alice")
    for bad in ("x" * 2000, "../nug:other", "ABC DEF", ""):
        assert nuggets.get(space, bad) is None
        with pytest.raises(NotFound):
            nuggets.delete(space, bad)
        with pytest.raises(NotFound):
            memories.update(alice, Mind(space), bad, MemoryPatch(priority="high"))
        with pytest.raises(NotFound):
            credentials.delete_api_key("alice", bad)
