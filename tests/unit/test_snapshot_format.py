"""The snapshot format (search/snapshot.py): a corpus packed and unpacked is the corpus, whatever its
text holds, and ranks like it; BM25 restored from stored postings is the index a build makes; an
object that is not a snapshot of this format, damaged or of another model's vectors is refused."""

from __future__ import annotations

import json
import struct
from dataclasses import fields
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synapse.search import corpus as corpora
from synapse.search import scoring, snapshot
from synapse.search.bm25 import BM25
from synapse.search.fusion import relevance, top_k
from synapse.search.tokenizer import tokenize
from synapse.store import changelog, codec, nuggets

MODEL, DIM = "m", 8
MODEL_KEY = f"{MODEL}/{DIM}"
AT = changelog.Version("0123456789abcdef0123456789abcdef", 7)
# text that a separator-joined column must survive: separators themselves, Thai, emoji, empties
TEXT = st.lists(
    st.sampled_from(["a", "b", "coffee ", "ข้าว", "ซอย ", "\x00", "\x1f", "\x1e", " ", "é", "🙂", "\n"]),
    max_size=8,
).map("".join)


def item(
    i: int, content: str, tags: list[str], vector: bool, other_model: bool, expires: bool
) -> dict[str, Any]:
    it: dict[str, Any] = {
        "sk": {"S": f"nug:{i:08x}-0000-0000-0000-000000000000"},
        "category": {"S": ("fact", "preference", "note")[i % 3]},
        "key": {"S": f"k_{i}"},
        "content": {"S": content},
        "tags": {"L": [{"S": t} for t in tags]},
        "priority": {"S": ("low", "normal", "high", "critical")[i % 4]},
        "verified": {"BOOL": i % 2 == 0},
        "created_at": {"S": "2026-11-01T10:00:00.000000Z"},
        "updated_at": {"S": f"2026-11-{1 + i % 28:02d}T10:00:00.000000Z"},
    }
    if expires:
        it["expires_at"] = {"S": "2026-12-01T00:00:00.000000Z"}
    if i % 2:
        it["valid_at"] = {"S": f"2025-0{1 + i % 9}-15T08:00:00.000000Z"}
    if vector:
        vec = np.random.default_rng(i).normal(size=DIM).astype(np.float32)
        it["emb"] = {
            "B": codec.make_vector(vec / np.linalg.norm(vec), "other" if other_model else MODEL).data
        }
    return it


rows = st.lists(
    st.tuples(TEXT, st.lists(TEXT, max_size=3), st.booleans(), st.booleans(), st.booleans()), max_size=25
)


def build(
    spec: list[tuple[str, list[str], bool, bool, bool]], model_key: str | None = MODEL_KEY
) -> corpora.Corpus:
    items = [item(i, *row) for i, row in enumerate(spec)]
    built = corpora.build(nuggets.columns(items), AT.token, model_key)
    built.at = AT
    return built


def same(got: corpora.Corpus, want: corpora.Corpus) -> None:
    for f in fields(nuggets.Columns):
        assert getattr(got.columns, f.name) == getattr(want.columns, f.name), f.name
    assert got.tokens == want.tokens
    for name in ("priority", "updated", "expires"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    for name in ("rows", "matrix", "scales"):
        assert np.array_equal(getattr(got.vectors, name), getattr(want.vectors, name)), name
    assert (got.bm25.n_docs, got.bm25.total_len) == (want.bm25.n_docs, want.bm25.total_len)
    assert (got.at, got.version, got.model_key) == (want.at, want.version, want.model_key)
    query = np.random.default_rng(3).normal(size=DIM).astype(np.float32)
    for probe in ("coffee", "ข้าวซอย", "a b", "é"):
        ranked = []
        for c in (got, want):
            dense = scoring.similarity(c, query, candidates=200) if len(c.vectors) else None
            scores = relevance(c.bm25, c.tokens, tokenize(probe), dense)
            ranked.append([(c.columns.ids[i], float(scores[i])) for i in top_k(scores, 10)])
        assert ranked[0] == ranked[1], probe


@settings(max_examples=60, deadline=None)
@given(spec=rows)
def test_a_packed_corpus_unpacks_to_the_same_corpus_and_ranks_the_same(spec: Any) -> None:
    # Given a corpus of memories whose text holds separators, Thai, emoji and empty values, some
    # without vectors or with another model's, some expiring
    want = build(spec)
    # When it is packed and unpacked for its model
    got = snapshot.unpack(snapshot.pack(want), MODEL_KEY)
    # Then it is the same corpus, row by row, and ranks every probe exactly like it
    same(got, want)


@settings(max_examples=20, deadline=None)
@given(spec=rows)
def test_without_a_model_the_corpus_has_no_vectors_as_ingest_reads_it(spec: Any) -> None:
    # Given a snapshot of a corpus with vectors
    data = snapshot.pack(build(spec))
    # When ingest unpacks it (no model)
    got = snapshot.unpack(data, None)
    # Then it is the corpus built without vectors
    same(got, build(spec, None) if spec else got)
    assert len(got.vectors) == 0 and got.vectors.matrix.shape == (0, 0)


def test_a_corpus_changed_row_by_row_packs_like_one_built_anew() -> None:
    # Given a corpus caught up row by row (BM25's slots no longer its positions) and one built anew
    spec = [(f"coffee {i} tea", [f"t{i % 3}"], True, False, False) for i in range(12)]
    moved = build(spec)
    edited = [item(i, "berlin coffee" if i % 2 else "tea", ["x"], True, False, False) for i in (3, 4, 20)]
    ids = [f"{i:08x}-0000-0000-0000-000000000000" for i in (3, 4, 20, 7)]  # 7: deleted
    at = changelog.Version(AT.epoch, AT.seq + 1)
    corpora.apply(moved, nuggets.columns(edited), ids, at)
    items = [item(i, *row) for i, row in enumerate(spec) if i not in (3, 4, 7)] + edited
    fresh = corpora.build(nuggets.columns(sorted(items, key=lambda it: it["sk"]["S"])), at.token, MODEL_KEY)
    fresh.at = at
    # When both are packed
    # Then they make the same bytes but for the time written, and unpack to the fresh corpus
    assert _without_time(snapshot.pack(moved)) == _without_time(snapshot.pack(fresh))
    same(snapshot.unpack(snapshot.pack(moved), MODEL_KEY), fresh)


def _without_time(data: bytes) -> bytes:
    head = snapshot.header(data)
    return data.replace(json.dumps(head.fields["written"]).encode(), b"")


def test_bm25_restored_from_postings_is_the_index_a_build_makes() -> None:
    # Given documents and the BM25 built from them
    docs = [["coffee", "berlin"], ["tea"], [], ["coffee", "coffee", "tea"], ["ข้าว", "ซอย"]]
    built = BM25(docs)
    vocab = sorted({t for d in docs for t in d})
    postings = {t: [(i, d.count(t)) for i, d in enumerate(docs) if t in d] for t in vocab}
    bounds = np.cumsum([0] + [len(postings[t]) for t in vocab])
    rows = np.array([i for t in vocab for i, _ in postings[t]], dtype=np.int32)
    tf = np.array([c for t in vocab for _, c in postings[t]], dtype=np.uint16)
    lengths = np.array([len(d) for d in docs], dtype=np.float32)
    # When it is restored from its postings, and both change one document at a time
    restored = BM25.from_postings(vocab, bounds, rows, tf, lengths, sum(map(len, docs)))
    for index in (built, restored):
        index.insert(1, ["berlin", "tea"])
        index.remove(3, [])
        index.replace(0, ["coffee", "berlin"], ["coffee"])
    # Then they score every query alike, and know the same terms
    for query in (["coffee"], ["tea", "berlin"], ["ข้าว"], ["nothing"]):
        assert np.array_equal(built.scores(query), restored.scores(query)), query
    assert {t: restored.idf(t) for t in vocab} == {t: built.idf(t) for t in vocab}


def test_tokens_made_on_use_behave_like_a_list() -> None:
    # Given a corpus unpacked from a snapshot (its tokens made when a row is read)
    want = build([("coffee tea", [], False, False, False), ("ข้าวซอย", [], False, False, False)] * 3)
    tokens = snapshot.unpack(snapshot.pack(want), MODEL_KEY).tokens
    # When rows are read, inserted, replaced and deleted as a catch-up does
    plain = [list(t) for t in want.tokens]
    for seq in (tokens, plain):
        seq.insert(1, ["new"])
        seq[3] = ["replaced"]
        del seq[0]
    # Then it holds what a list would
    assert len(tokens) == len(plain) and tokens[0] == plain[0] and tokens[1:3] == plain[1:3]
    assert tokens == plain and list(tokens) == plain


# --- refusals -------------------------------------------------------------------------------------------


def test_a_header_changed_in_place_still_loads(packed: bytes) -> None:
    # (the refusals below change headers this way: unchanged, it loads)
    assert len(snapshot.unpack(_with_header(packed, lambda f: None), MODEL_KEY)) == 6


@pytest.fixture(scope="module")
def packed() -> bytes:
    return snapshot.pack(build([(f"coffee {i}", ["t"], True, False, False) for i in range(6)]))


def _with_header(data: bytes, change: Any) -> bytes:
    """The snapshot with its header changed, the arrays where they were (the header keeps its size:
    the time it was written gives room, blanks fill the rest)."""
    head = snapshot.header(data)
    fields = json.loads(json.dumps(head.fields))
    fields["written"] = 0
    change(fields)
    text = json.dumps(fields, separators=(",", ":")).encode()
    (length,) = struct.unpack("<I", data[8:12])
    assert len(text) <= length, "the change does not fit in the header"
    return data[:12] + text + b" " * (length - len(text)) + data[12 + length :]


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda d: b"", id="empty"),
        pytest.param(lambda d: b"PK\x03\x04" + d[4:], id="another magic"),
        pytest.param(lambda d: d[:40], id="truncated header"),
        pytest.param(lambda d: d[: len(d) // 2], id="truncated arrays"),
        pytest.param(lambda d: d[:12] + b"[" + d[13:], id="header not JSON"),
        pytest.param(lambda d: d.replace(b'"format":1', b'"format":2'), id="unknown format"),
        pytest.param(lambda d: d.replace(b'"rows":6', b'"rows":7'), id="rows not the arrays'"),
        pytest.param(
            lambda d: _with_header(d, lambda f: f["arrays"]["ids"].__setitem__(0, "<i8")), id="dtype"
        ),
        pytest.param(
            lambda d: _with_header(d, lambda f: f["arrays"]["vec_rows"].__setitem__(1, 10**9)), id="offset"
        ),
        pytest.param(
            lambda d: _with_header(d, lambda f: f["arrays"]["vec_rows"].__setitem__(1, 4)), id="in header"
        ),
        pytest.param(
            lambda d: _with_header(d, lambda f: f["arrays"]["contents"].__setitem__(2, 1)), id="length"
        ),
        pytest.param(
            lambda d: _with_header(d, lambda f: f["arrays"]["keys"].__setitem__(3, "x")), id="separator"
        ),
        pytest.param(lambda d: _with_header(d, lambda f: f["arrays"].pop("post_tf")), id="missing array"),
    ],
)
def test_an_object_that_is_not_a_whole_snapshot_of_this_format_is_refused(packed: bytes, damage: Any) -> None:
    # Given a snapshot damaged, cut or of another format
    data = damage(packed)
    # When it is unpacked
    # Then it is refused (the reader reads the mind whole), never loaded half right
    with pytest.raises(snapshot.BadSnapshot):
        snapshot.unpack(data, MODEL_KEY)


def test_values_out_of_range_are_refused(packed: bytes) -> None:
    # Given snapshots whose token ids, posting rows or vector rows point past their tables
    head = snapshot.header(packed)
    arrays = head.fields["arrays"]
    for name, dtype in (("tok_ids", "<i4"), ("post_rows", "<i4"), ("vec_rows", "<i4")):
        data = bytearray(packed)
        offset = arrays[name][1]
        data[offset : offset + 4] = np.array([10**6], dtype=dtype).tobytes()
        # Then each is refused
        with pytest.raises(snapshot.BadSnapshot):
            snapshot.unpack(bytes(data), MODEL_KEY)


def test_another_models_vectors_are_refused_but_ingest_reads_the_rest(packed: bytes) -> None:
    # Given a snapshot of the vectors of model "m/8"
    # When a reader of another model's vectors unpacks it
    # Then it is refused (the reader reads the mind whole and asks for a snapshot of its model)
    with pytest.raises(snapshot.BadSnapshot):
        snapshot.unpack(packed, "another/8")
    # And a reader of none (ingest) takes it
    assert len(snapshot.unpack(packed, None)) == 6


def test_a_corpus_outside_the_cache_has_no_position_to_pack() -> None:
    built = corpora.build(nuggets.columns([]), "", None)
    with pytest.raises(ValueError, match="position"):
        snapshot.pack(built)
