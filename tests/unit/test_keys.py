"""Sort keys and the public ids built from them (no AWS)."""

from __future__ import annotations

import pytest

from synapse import store


@pytest.mark.parametrize(
    ("session", "n", "public"),
    [("s1", 1, "sum:s1:chunk_1"), ("chat_2026_12", 12, "sum:chat_2026_12:chunk_12"), ("a.b-c", 9999, None)],
)
def test_a_chunk_id_is_its_sort_key_without_the_padding(session: str, n: int, public: str | None) -> None:
    sk = store.summary_sk(session, n)
    assert store.chunk_id(sk) == (public or f"sum:{session}:chunk_{n}")


def test_summary_keys_sort_in_write_order() -> None:
    # the padding is what makes DynamoDB's byte order the chunks' order
    keys = [store.summary_sk("s", n) for n in (1, 2, 9, 10, 11, 100)]
    assert sorted(keys) == keys
    assert [store.chunk_id(k) for k in keys] == [f"sum:s:chunk_{n}" for n in (1, 2, 9, 10, 11, 100)]
