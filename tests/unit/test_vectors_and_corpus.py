"""The stored vector codec, the search corpus built from raw items, its dense scoring and its cache."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np
import pytest

from synapse.search import cache, vectors
from synapse.search.corpus import Corpus, build
from synapse.store import changelog, codec, nuggets
from synapse.store.keys import Space

DIM = 64


def unit(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def raw_item(
    i: int, vec: np.ndarray | None, model: str = "m", content: str = "text", **extra: Any
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "sk": {"S": f"nug:id{i}"},
        "category": {"S": "fact"},
        "key": {"S": f"k{i}"},
        "content": {"S": content},
        "tags": {"L": [{"S": "t"}]},
        "priority": {"S": "normal"},
        "verified": {"BOOL": False},
        "created_at": {"S": "2026-12-01T00:00:00Z"},
        "updated_at": {"S": "2026-12-01T00:00:00Z"},
        **extra,
    }
    if vec is not None:
        # as recall's Query returns it: the vector only (its model and size are in its bytes)
        item["emb"] = {"B": codec.make_vector(vec, model).data}
    return item


def test_the_codec_is_int8_with_a_scale_and_keeps_the_direction() -> None:
    rng = np.random.default_rng(1)
    v = unit(rng, 1, 768)[0]
    data = codec.make_vector(v, "m").data
    assert len(data) == 8 + 768  # tag, scale, then half of float16's bytes
    back = codec.decode_vector(data)
    assert float(back @ v) / float(np.linalg.norm(back)) > 0.999


def test_decode_matrix_reads_many_vectors_in_one_copy() -> None:
    rng = np.random.default_rng(2)
    m = unit(rng, 50)
    index, ints, scales = codec.decode_matrix([codec.make_vector(v, "m").data for v in m], "m", DIM)
    assert index.tolist() == list(range(50))
    assert ints.shape == (50, DIM) and ints.dtype == np.int8 and scales.shape == (50,)
    approx = ints.astype(np.float32) * scales[:, None]
    assert np.allclose(approx, m, atol=0.02)


def test_dense_scores_rank_like_exact_cosine() -> None:
    rng = np.random.default_rng(3)
    m = unit(rng, 500)
    corpus = build(nuggets.columns([raw_item(i, v) for i, v in enumerate(m)]), "v1", f"m/{DIM}")
    q = m[7] + 0.1 * unit(rng, 1)[0]
    scores = vectors.dense_scores(corpus.vectors, q, candidates=50)
    exact = m @ q
    assert set(np.argsort(-scores)[:10]) == set(np.argsort(-exact)[:10])


def matryoshka_like(rng: np.random.Generator, n: int) -> np.ndarray:
    """Unit vectors whose first dimensions carry most of the signal (as Gemini's, MRL-trained)."""
    m = unit(rng, n) * np.exp(-np.arange(DIM) / 12.0).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def corpus_of(m: np.ndarray) -> Corpus:
    return build(nuggets.columns([raw_item(i, v) for i, v in enumerate(m)]), "v1", f"m/{DIM}")


def small_prefix(monkeypatch: pytest.MonkeyPatch, dims: int, pool: int) -> None:
    """The prefix pass at test scale: from 100 rows, `dims` of DIM, a shortlist of `pool`."""
    monkeypatch.setattr(vectors, "PREFIX_MIN_ROWS", 100)
    monkeypatch.setattr(vectors, "PREFIX_DIMS", dims)
    monkeypatch.setattr(vectors, "PREFIX_POOL", pool)


def test_the_prefix_is_refused_when_it_does_not_rank_like_the_full_vectors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    small_prefix(monkeypatch, dims=16, pool=100)
    rng = np.random.default_rng(8)
    # isotropic vectors: 16 of 64 dims carry a quarter of the signal, the shortlist misses the top 10
    plain = corpus_of(unit(rng, 3000)).vectors
    assert vectors.with_prefix(plain).prefix is None and plain.prefix_refused
    checks = []
    monkeypatch.setattr(vectors, "prefix_agreement", lambda *a: checks.append(a) or 1.0)
    assert vectors.with_prefix(plain).prefix is None and not checks  # decided once per corpus
    q = unit(rng, 1)[0]
    exact = (plain.matrix.astype(np.float32) @ q) * plain.scales
    assert np.allclose(vectors.dense_scores(plain, q, candidates=50), exact, atol=1e-6)  # the exact pass


def test_the_self_check_tells_a_matryoshka_like_corpus_from_an_isotropic_one() -> None:
    rng = np.random.default_rng(9)
    scores = {}
    for name, m in (("mrl", matryoshka_like(rng, 3000)), ("iso", unit(rng, 3000))):
        found = corpus_of(m).vectors
        prefix = found.matrix[:, :16].astype(np.float32) * found.scales[:, None]
        prefix /= np.linalg.norm(prefix, axis=1, keepdims=True)
        scores[name] = vectors.prefix_agreement(found.matrix, found.scales, prefix)
    assert scores["mrl"] >= vectors.PREFIX_MIN_AGREEMENT > scores["iso"]


def test_a_large_corpus_is_scored_on_a_prefix_then_reranked_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    small_prefix(monkeypatch, dims=32, pool=100)
    rng = np.random.default_rng(4)
    # Matryoshka-like vectors (as Gemini's are): most of the signal sits in the first dimensions
    decay = np.exp(-np.arange(DIM) / 12.0).astype(np.float32)
    m = unit(rng, 2000) * decay
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    corpus = build(nuggets.columns([raw_item(i, v) for i, v in enumerate(m)]), "v1", f"m/{DIM}")
    assert corpus.vectors.prefix is None  # a cold load scores exactly; the prefix comes with reuse
    found = vectors.with_prefix(corpus.vectors)
    assert found is corpus.vectors and found.prefix is not None and found.prefix.shape == (2000, 32)
    q = m[42] + 0.05 * unit(rng, 1)[0] * decay
    scores = vectors.dense_scores(found, q, candidates=100)
    exact = m @ q
    top = np.argsort(-exact)[:10]
    assert set(np.argsort(-scores)[:10]) == set(top)
    assert np.allclose(scores[top], exact[top], atol=0.02)


def test_the_prefix_shortlist_is_at_least_the_pool_whatever_the_caller_asks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    small_prefix(monkeypatch, dims=32, pool=300)
    rng = np.random.default_rng(6)
    m = matryoshka_like(rng, 2000)
    found = vectors.with_prefix(corpus_of(m).vectors)
    q = unit(rng, 1)[0]
    full = (found.matrix.astype(np.float32) @ q) * found.scales  # the exact int8 score of every row

    def rescored(candidates: int) -> int:
        return int(np.sum(np.isclose(vectors.dense_scores(found, q, candidates), full, rtol=0, atol=1e-6)))

    assert rescored(50) == 300  # a narrow request still gets the pool re-scored exactly
    assert rescored(400) == 400  # a wider one gets what it asked
    monkeypatch.setattr(vectors, "PREFIX_POOL", 600)  # 2000 rows are not > 4 × 600: exact everywhere
    assert rescored(50) == 2000


def test_vectors_of_another_model_or_size_are_left_out() -> None:
    rng = np.random.default_rng(5)
    items = [
        raw_item(0, unit(rng, 1)[0], model="m"),
        raw_item(1, unit(rng, 1)[0], model="other"),
        raw_item(2, unit(rng, 1, 32)[0], model="m"),
        raw_item(3, None),
    ]
    corpus = build(nuggets.columns(items), "v1", f"m/{DIM}")
    assert corpus.vectors.rows.tolist() == [0]
    assert len(corpus) == 4


def test_rows_map_back_to_their_items_whatever_is_mixed_in() -> None:
    # Given vectors of this model between others, items without one, and a vector of another size
    rng = np.random.default_rng(6)
    mine = unit(rng, 2)
    items = [
        raw_item(0, unit(rng, 1)[0], model="other"),
        raw_item(1, mine[0]),
        raw_item(2, None),
        raw_item(3, unit(rng, 1, 32)[0]),
        raw_item(4, mine[1]),
    ]
    found = vectors.index(nuggets.columns(items).embs, f"m/{DIM}")
    # Then each kept row is the index of its item, and its vector is that item's
    assert found.rows.tolist() == [1, 4]
    assert np.allclose(found.matrix.astype(np.float32) * found.scales[:, None], mine, atol=0.02)
    assert vectors.index(nuggets.columns(items).embs, None).rows.tolist() == []


def test_the_cache_serves_a_corpus_only_for_its_version() -> None:
    lru = cache.CorpusCache(max_rows=10)
    corpus = build(nuggets.columns([raw_item(i, None) for i in range(4)]), "v1", None)
    lru.put("alice", corpus)
    assert lru.get("alice", None, "v1") is corpus
    assert lru.get("alice", None, "v2") is None  # a write changed the version
    assert lru.get("bob", None, "v1") is None
    lru.put("bob", build(nuggets.columns([raw_item(i, None) for i in range(8)]), "v1", None))
    assert lru.get("alice", None, "v1") is None  # evicted: over the row budget


def test_a_rebuild_after_writes_tokenizes_only_what_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    from synapse.search import tokenizer

    texts = ["likes black coffee", "ชอบกาแฟดำ", "runs on weekends", "learning Rust", "dog named Kai"]
    before = build(nuggets.columns([raw_item(i, None, content=t) for i, t in enumerate(texts)]), "v1", None)
    calls: list[str] = []
    real = tokenizer.tokenize
    monkeypatch.setattr(tokenizer, "tokenize", lambda text: calls.append(text) or real(text))
    after_items = [raw_item(i, None, content=t) for i, t in enumerate(texts)]
    after_items[1]["content"] = {"S": "ชอบชาเขียว"}  # content rewritten
    after_items[2]["tags"] = {"L": [{"S": "sport"}]}  # tags changed
    after_items[3]["key"] = {"S": "language_learning"}  # key changed
    del after_items[4]  # deleted
    after_items.append(raw_item(9, None, content="moved to Chiang Mai"))  # new
    after = build(nuggets.columns(after_items), "v2", None, previous=before)
    assert len(calls) == 4  # the unchanged memory (id0) is not tokenized again
    assert after.tokens[0] is before.tokens[0]
    fresh = build(nuggets.columns(after_items), "v2", None)
    assert after.tokens == fresh.tokens
    query = real("ชาเขียว Chiang Mai sport language")
    assert np.array_equal(after.bm25.scores(query), fresh.bm25.scores(query))


def test_a_stale_cached_corpus_lends_its_tokens_to_the_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    cache.CACHE.clear()
    old = build(nuggets.columns([raw_item(i, None) for i in range(3)]), "v1", None)
    cache.CACHE.put("alice", old)
    monkeypatch.setattr(changelog, "read", lambda user_id: changelog.Version("e1", 2))
    monkeypatch.setattr(
        nuggets, "read_columns", lambda space: nuggets.columns([raw_item(i, None) for i in range(4)])
    )
    monkeypatch.setattr(cache, "settings", lambda: type("S", (), {"recall_cache": True})())
    try:
        corpus = cache.load(Space("alice"), None)
        assert corpus.version == "e1:2" and corpus.at == changelog.Version("e1", 2) and len(corpus) == 4
        assert corpus.tokens[0] is old.tokens[0]
        assert cache.CACHE.stale("bob", None) is None  # never another user's
    finally:
        cache.CACHE.clear()


def test_columns_change_one_row_at_a_time_and_a_corpus_keeps_no_vector_bytes() -> None:
    # Given the columns of three memories (with vectors), and the columns of two changed ones
    rng = np.random.default_rng(10)
    cols = nuggets.columns([raw_item(i, unit(rng, 1)[0], content=f"text {i}") for i in (1, 3, 5)])
    embs = list(cols.embs)
    high, verified = {"priority": {"S": "high"}}, {"verified": {"BOOL": True}}
    changed = nuggets.columns(
        [raw_item(2, None, "m", "new", **high), raw_item(3, None, "m", "edited", **verified)]
    )
    # When one row is inserted, one replaced and one removed
    cols.insert(1, changed, 0)
    cols.replace(2, changed, 1)
    cols.remove(3)
    # Then every row field moved together, as a read of the memories as they are now has them
    want = nuggets.columns(
        [
            raw_item(1, None, content="text 1"),
            raw_item(2, None, "m", "new", **high),
            raw_item(3, None, "m", "edited", **verified),
        ]
    )
    assert [f.name for f in fields(nuggets.Columns) if getattr(cols, f.name) != getattr(want, f.name)] == [
        "embs"
    ]
    # and the vectors' bytes were left alone: they are not a row field
    assert cols.embs == embs
    # And a corpus built from columns decodes their vectors and keeps none of their bytes
    corpus = build(nuggets.columns([raw_item(i, unit(rng, 1)[0]) for i in range(3)]), "v1", f"m/{DIM}")
    assert corpus.columns.embs == [] and len(corpus.columns) == len(corpus.vectors) == 3
