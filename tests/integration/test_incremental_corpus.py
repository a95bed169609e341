"""Incremental reads, proven: random sequences of creates, updates, deletes, verifications, restores,
expiries and minds, with recalls in between from two simulated containers (each its own corpus cache),
and after every recall each container's corpus is the one a full read builds — the same rows in the
same order, the same BM25 statistics and vectors — and ranks every probe query exactly like it."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import fields
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synapse.core.models.base import Category, utcnow
from synapse.core.models.memory import MemoryIn, MemoryPatch, RestoreIn
from synapse.core.models.minds import MindIn
from synapse.core.principal import ALL_SCOPES, Principal
from synapse.search import cache, scoring
from synapse.search.corpus import Corpus, build
from synapse.search.fusion import relevance, top_k
from synapse.search.tokenizer import tokenize
from synapse.services.account import minds
from synapse.services.memory import memories
from synapse.store import codec, db, nuggets
from synapse.store.keys import Space
from synapse.store.minds import Mind

MODEL = "test-embedder"
DIM = 16
MODEL_KEY = f"{MODEL}/{DIM}"
WORDS = ["coffee", "tea", "Bangkok", "Berlin", "ข้าวซอย", "เชียงใหม่", "nurse", "python", "dark", "theme"]
PROBES = ["coffee Berlin", "ข้าวซอย เชียงใหม่", "dark theme python", "nurse"]


def fake_vector(_: str, text: str) -> codec.Vector:
    """A deterministic vector per text (no model: the corpus only stores and scores them)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    vec = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return codec.make_vector(vec / np.linalg.norm(vec), MODEL)


def text(words: list[int]) -> str:
    return " ".join(WORDS[w % len(WORDS)] for w in words) or "note"


op = st.one_of(
    st.tuples(st.just("put"), st.integers(0, 7), st.lists(st.integers(0, 30), min_size=1, max_size=6)),
    st.tuples(st.just("edit"), st.integers(0, 7), st.lists(st.integers(0, 30), min_size=1, max_size=6)),
    st.tuples(st.just("delete"), st.integers(0, 7), st.just([])),
    st.tuples(st.just("verify"), st.integers(0, 7), st.just([])),
    st.tuples(st.just("restore"), st.integers(0, 7), st.just([])),
    st.tuples(st.just("expire"), st.integers(0, 7), st.just([])),
    st.tuples(st.just("mind"), st.integers(0, 1), st.just([])),
    st.tuples(st.just("recall"), st.integers(0, 1), st.just([])),
)


def same_corpus(got: Corpus, want: Corpus) -> None:
    for f in fields(nuggets.Columns):
        assert getattr(got.columns, f.name) == getattr(want.columns, f.name), f.name
    assert got.tokens == want.tokens
    for name in ("priority", "updated", "expires"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    for name in ("rows", "matrix", "scales"):
        assert np.array_equal(getattr(got.vectors, name), getattr(want.vectors, name)), name
    assert (got.bm25.n_docs, got.bm25.total_len) == (want.bm25.n_docs, want.bm25.total_len)
    rng = np.random.default_rng(7)
    for probe in PROBES:
        query = rng.normal(size=DIM).astype(np.float32)
        ranked = []
        for corpus in (got, want):
            dense = None
            if len(corpus.vectors):
                dense = scoring.similarity(corpus, query, candidates=200)
            scores = relevance(corpus.bm25, corpus.tokens, tokenize(probe), dense)
            ranked.append([(corpus.columns.ids[i], float(scores[i])) for i in top_k(scores, 10)])
        assert ranked[0] == ranked[1], probe


@pytest.mark.slow
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(op, min_size=1, max_size=30))
def test_two_containers_catch_up_to_exactly_what_a_full_read_builds(
    aws: Any, monkeypatch: pytest.MonkeyPatch, ops: list[tuple[str, int, list[int]]]
) -> None:
    play(monkeypatch, ops)


# every kind of write between the recalls of both containers, each recall a catch-up
FIXED = [
    ("recall", 0, []), ("recall", 1, []),
    ("put", 1, [1, 2, 3]), ("put", 2, [4, 4, 5]), ("recall", 0, []),
    ("edit", 1, [6, 7, 8, 9, 10]), ("recall", 0, []), ("recall", 1, []),
    ("verify", 2, []), ("put", 2, [11]), ("restore", 2, []), ("recall", 1, []),
    ("delete", 1, []), ("recall", 0, []), ("expire", 2, []), ("put", 3, [2]), ("recall", 1, []),
    ("delete", 0, []), ("delete", 2, []), ("delete", 3, []), ("recall", 0, []), ("recall", 1, []),
    ("put", 5, [0, 1]), ("put", 6, [3]), ("recall", 0, []),
]  # fmt: skip


def test_a_fixed_sequence_catches_up_at_every_recall(aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    recalls = sum(1 for kind, *_ in FIXED if kind == "recall")
    assert play(monkeypatch, FIXED) == recalls - 2  # all but each container's first (a full read)


def play(monkeypatch: pytest.MonkeyPatch, ops: list[tuple[str, int, list[int]]]) -> int:
    """Run the operations; returns how many recalls caught up on the container's own corpus."""
    monkeypatch.setattr(memories, "embed_document", fake_vector)
    monkeypatch.setattr(cache, "settings", lambda: type("S", (), {"recall_cache": True})())
    user = f"u{uuid.uuid4().hex[:10]}"
    people = [Principal(user, "user", frozenset(ALL_SCOPES))]
    containers = [cache.CorpusCache(10_000), cache.CorpusCache(10_000)]
    ids: dict[tuple[str, int], str] = {}
    # every mind starts with a memory: a mind never written has no version yet (a full read)
    ids[(people[0].mind_id, 0)] = memories.put(
        people[0],
        minds.resolve(people[0]),
        MemoryIn(category=Category.fact, key="k0", content="coffee in Berlin"),
    )[0].id
    caught_up = 0
    for kind, n, words in ops:
        who = people[-1]
        key = (who.mind_id, n)
        mem_id = ids.get(key)
        if kind == "put":
            body = MemoryIn(
                category=Category.fact, key=f"k{n}", content=text(words), tags=[WORDS[n % 10].lower()]
            )
            ids[key] = memories.put(who, minds.resolve(who), body)[0].id
        elif kind == "mind" and len(people) == 1:
            made = minds.create(people[0], MindIn(name=f"mind {n}"))
            people.append(people[0].in_mind(made.mind_id))
            first = MemoryIn(category=Category.note, key="k0", content="ข้าวซอย เชียงใหม่")
            ids[(made.mind_id, 0)] = memories.put(people[-1], minds.resolve(people[-1]), first)[0].id
        elif kind == "recall":
            space = minds.resolve(who).space
            monkeypatch.setattr(cache, "CACHE", containers[n])
            kept = containers[n].stale(cache.owner(space), MODEL_KEY)
            got = cache.load(space, MODEL_KEY)
            caught_up += got is kept
            want = build(nuggets.read_columns(space), "", MODEL_KEY)
            same_corpus(got, want)
        elif mem_id is not None:
            mind = minds.resolve(who)
            try:
                if kind == "edit":
                    memories.update(who, mind, mem_id, MemoryPatch(content=text(words), priority="high"))
                elif kind == "delete":
                    memories.delete(mind, mem_id)
                    del ids[key]
                elif kind == "verify":
                    memories.verify(who, mind, mem_id)
                elif kind == "restore":
                    memories.restore(who, mind, mem_id, RestoreIn(version=1))
                elif kind == "expire":
                    memories.update(who, mind, mem_id, MemoryPatch(expires_at=utcnow() - timedelta(days=1)))
            except Exception as exc:  # an expired memory is 404 to reads (verify, restore)
                assert type(exc).__name__ == "NotFound", exc
    return caught_up


def test_a_recall_after_one_write_reads_the_change_and_that_memory_only(
    aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a container that has recalled 40 memories
    monkeypatch.setattr(memories, "embed_document", fake_vector)
    monkeypatch.setattr(cache, "settings", lambda: type("S", (), {"recall_cache": True})())
    monkeypatch.setattr(cache, "CACHE", cache.CorpusCache(10_000))
    who = Principal("alice", "user", frozenset(ALL_SCOPES))
    space = Space("alice")
    mind = Mind(space)
    for i in range(40):
        memories.put(who, mind, MemoryIn(category=Category.fact, key=f"k{i}", content=text([i, i + 1])))
    before = cache.load(space, MODEL_KEY)
    # When one memory is written and the next recall loads the corpus
    memories.put(who, mind, MemoryIn(category=Category.fact, key="k3", content="I moved to Berlin"))
    calls = spy(monkeypatch)
    after = cache.load(space, MODEL_KEY)
    # Then it read the version (which names the latest writes' ids) and that one memory: never the
    # mind's memories, not even the log
    assert after is before and "I moved to Berlin" in after.columns.contents
    assert [c[0] for c in calls] == ["get_item", "batch_get_item"]
    (batch,) = calls[1][1]["RequestItems"].values()
    assert len(batch["Keys"]) == 1
    # And when it is further behind than the version item tells, it reads the log's entries
    for i in range(5):
        memories.put(who, mind, MemoryIn(category=Category.fact, key=f"new{i}", content=f"new fact {i}"))
    memories.delete(mind, after.columns.ids[0])
    calls.clear()
    again = cache.load(space, MODEL_KEY)
    assert again is before and len(again) == 40 + 5 - 1
    assert [c[0] for c in calls] == ["get_item", "query", "batch_get_item"]
    assert "chg:" in str(calls[1][1]["ExpressionAttributeValues"])
    (batch,) = calls[2][1]["RequestItems"].values()
    assert len(batch["Keys"]) == 6
    same_corpus(again, build(nuggets.read_columns(space), "", MODEL_KEY))


def spy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """The DynamoDB calls made from now on (name, parameters)."""
    calls: list[tuple[str, Any]] = []
    client = db.client()
    for name in ("query", "get_item", "batch_get_item"):
        real = getattr(client, name)

        def record(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any) -> Any:
            calls.append((_name, kwargs))
            return _real(*args, **kwargs)

        monkeypatch.setattr(client, name, record)
    return calls
