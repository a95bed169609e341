"""Fusion of the signals into one relevance score, and the small nudges after it.

- `RankingParams` / `DEFAULTS`: every tunable choice of the ranking in one frozen value (the service
  uses `DEFAULTS`; `make bench-locomo` picks them per fold for its leave-one-conversation-out
  estimate, see docs/benchmark-locomo.md).
- `hybrid_scores`: fusion of dense and lexical scores into one score in [0, 1] per doc.
- `expand_query`: pseudo-relevance feedback terms from a first pass's best hits (optional second pass).
- `relevance`: the recipe in one call (hybrid, then one feedback pass).
- `boost`: small additive nudges for priority and recency, bounded so that they reorder near-ties
  but never lift a clearly less relevant memory over a clearly more relevant one.
- `top_k`: the best k of a score array (a partial sort).

numpy only: no AWS, fast to import. The choices were measured on the LoCoMo development split with
`bench/locomo/offline.py`; docs/ranking.md has the numbers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from synapse.search import bm25
from synapse.search.bm25 import BM25

__all__ = [
    "DEFAULTS",
    "DEFAULT_DENSE_WEIGHT",
    "DEFAULT_METHOD",
    "FEEDBACK_DOCS",
    "FEEDBACK_TERMS",
    "FEEDBACK_WEIGHT",
    "PRIORITY_NUDGE",
    "RECENCY_HALF_LIFE_DAYS",
    "RECENCY_NUDGE",
    "RRF_K",
    "FusionMethod",
    "RankingParams",
    "boost",
    "expand_query",
    "hybrid_scores",
    "relevance",
    "top_k",
]

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.intp]
FusionMethod = Literal["rrf", "zscore", "minmax"]


@dataclass(frozen=True)
class RankingParams:
    """Every tunable choice of the ranking, with the values the service uses (`DEFAULTS`).

    Fusion and feedback: chosen on the five LoCoMo development conversations (docs/ranking.md), so
    their LoCoMo figures are in-sample. BM25's k1 0.9 and b 0.5 (until 2026-12-03 the textbook 1.2
    and 0.75): the one choice every fold of `make bench-locomo`'s leave-one-conversation-out
    estimate picked on its four training conversations (bench/locomo/cv.py), and better on all three
    checks: LoCoMo, LoCoMo with feedback from the turn text alone (no "[date] speaker:" prefix), and
    the Thai check (unchanged at 40 of 42). The folds' other picks (dense weight 0.4, feedback from
    2 hits at 0.5) were not taken: their gain came from LoCoMo's prefixes and they cost 2 Thai
    queries or text-only recall. The nudges were set by hand: LoCoMo cannot tune them (every turn
    has the same priority, and the benchmark stores all turns at once); `rrf_k` is for "rrf" only.
    """

    # BM25 (Okapi): term-frequency saturation and length normalisation (memories are short: a
    # weaker length normalisation than the textbook 0.75 ranked better, in Thai as well); the
    # values are BM25's own defaults (bm25.K1, bm25.B)
    bm25_k1: float = bm25.K1
    bm25_b: float = bm25.B
    # fusion of dense cosine and BM25: method, the dense share, RRF's k (method "rrf" only)
    method: FusionMethod = "minmax"
    dense_weight: float = 0.5
    rrf_k: float = 60.0
    # pseudo-relevance feedback: the first pass's top `feedback_docs` hits lend `feedback_terms`
    # extra query terms at `feedback_weight` of the query's weight; 0 docs = no feedback pass
    feedback_docs: int = 3
    feedback_terms: int = 20
    feedback_weight: float = 0.35
    # boost: priority step per rank from normal, recency bonus at age 0 and its half-life
    priority_nudge: float = 0.02
    recency_nudge: float = 0.02
    recency_half_life_days: float = 30.0
    # a query naming a period (scoring.best_within): what a memory of the period adds to its score,
    # on the [0, 1] relevance scale, with an embedder and with full text alone; chosen on the temporal
    # set (`python -m bench.temporal tune`, docs/ranking.md "Periods")
    period_boost: float = 0.4
    period_boost_lexical: float = 0.6


DEFAULTS = RankingParams()


def top_k(scores: np.ndarray, k: int) -> IntArray:
    """Indices of the `k` best scores, best first (a partial sort: O(n + k log k))."""
    n = int(scores.shape[0])
    k = min(max(int(k), 0), n)
    if k == 0:
        return np.zeros(0, dtype=np.intp)
    neg = -np.asarray(scores, dtype=np.float64)
    part = np.argpartition(neg, k - 1)[:k] if k < n else np.arange(n, dtype=np.intp)
    order = np.argsort(neg[part], kind="stable")
    return np.asarray(part[order], dtype=np.intp)


# Chosen on LoCoMo (docs/ranking.md, RankingParams): min-max normalised weighted sum, dense and
# BM25 equal.
# Score fusion beat reciprocal rank fusion by 5 points of recall@10 there: BM25 is sharp (a few
# strong hits, then nothing) and ranks throw that away.
DEFAULT_METHOD: FusionMethod = DEFAULTS.method
DEFAULT_DENSE_WEIGHT = DEFAULTS.dense_weight
RRF_K = DEFAULTS.rrf_k


def _ranks(scores: FloatArray) -> FloatArray:
    """1-based rank of every score (1 = best); ties share the best rank of their group."""
    n = scores.shape[0]
    order = np.argsort(-scores, kind="stable")
    sorted_scores = scores[order]
    # The first position of each run of equal scores.
    starts = np.ones(n, dtype=bool)
    starts[1:] = sorted_scores[1:] != sorted_scores[:-1]
    first = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    ranks = np.empty(n, dtype=np.float32)
    ranks[order] = (first + 1).astype(np.float32)
    return ranks


def _rrf(scores: FloatArray, k: float, *, positive_only: bool) -> FloatArray:
    """Reciprocal rank, scaled so that rank 1 is 1.0; docs with no lexical match get 0."""
    out = ((k + 1.0) / (k + _ranks(scores))).astype(np.float32)
    if positive_only:
        out[scores <= 0] = 0.0
    return out


def _minmax(scores: FloatArray) -> FloatArray:
    lo = float(np.min(scores))
    hi = float(np.max(scores))
    if hi - lo <= 1e-12:
        return np.zeros_like(scores) if hi <= 0 else np.ones_like(scores)
    return ((scores - lo) / (hi - lo)).astype(np.float32)


def _zscore(scores: FloatArray) -> FloatArray:
    sd = float(scores.std())
    if sd <= 1e-12:
        return np.zeros_like(scores)
    return ((scores - float(scores.mean())) / sd).astype(np.float32)


def hybrid_scores(
    dense: np.ndarray | None,
    lexical: np.ndarray,
    *,
    dense_weight: float = DEFAULT_DENSE_WEIGHT,
    method: FusionMethod = DEFAULT_METHOD,
    rrf_k: float = RRF_K,
) -> FloatArray:
    """One fused relevance score per document, higher is better, in [0, 1].

    `dense` holds cosine similarities (or None when there is no embedder), `lexical` BM25 scores.
    Methods: ``"rrf"`` (reciprocal rank fusion: weighted ``(k+1)/(k+rank)`` of each list; documents
    with no lexical match get no lexical share), ``"zscore"`` and ``"minmax"`` (normalised weighted
    sums). Without dense scores the result is BM25 divided by its maximum.
    """
    lex = np.asarray(lexical, dtype=np.float32)
    n = lex.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.float32)
    if dense is None:
        top = float(lex.max())
        return (lex / top).astype(np.float32) if top > 0 else np.zeros(n, dtype=np.float32)
    den = np.asarray(dense, dtype=np.float32)
    if den.shape != lex.shape:
        raise ValueError(f"dense {den.shape} and lexical {lex.shape} scores differ in shape")
    w = min(max(float(dense_weight), 0.0), 1.0)
    if method == "rrf":
        fused = w * _rrf(den, rrf_k, positive_only=False) + (1.0 - w) * _rrf(lex, rrf_k, positive_only=True)
    elif method == "minmax":
        fused = w * _minmax(den) + (1.0 - w) * _minmax(lex)
    elif method == "zscore":
        z = w * _zscore(den) + (1.0 - w) * _zscore(lex)
        fused = _minmax(z)
    else:
        raise ValueError(f"unknown fusion method {method!r}")
    return np.asarray(fused, dtype=np.float32)


def expand_query(
    bm25: BM25,
    query_tokens: Sequence[str],
    feedback_docs: Sequence[Sequence[str]],
    *,
    n_terms: int = 10,
) -> list[str]:
    """Pseudo-relevance feedback: the `n_terms` most telling terms of the top documents.

    Each term of the feedback documents (the tokens of the best few hits of a first pass) scores
    the sum over those documents of its IDF times its share of the document; terms already in the
    query are left out. Score the result with a small weight beside the query, e.g.
    ``bm25.scores(q) + FEEDBACK_WEIGHT * bm25.scores(expand_query(bm25, q, top_docs))``.
    """
    seen = set(query_tokens)
    weights: dict[str, float] = {}
    for doc in feedback_docs:
        if not doc:
            continue
        share = 1.0 / len(doc)
        for term, count in Counter(doc).items():
            if term not in seen:
                weights[term] = weights.get(term, 0.0) + bm25.idf(term) * count * share
    ranked = sorted(weights.items(), key=lambda item: (-item[1], item[0]))
    return [term for term, _ in ranked[:n_terms]]


# Feedback: the top 3 hits of the first (hybrid) pass, 20 terms, at 0.35 of the query's weight
# (+3.5 points of recall@10 on LoCoMo; part of it from LoCoMo's "[date] speaker:" prefixes).
FEEDBACK_DOCS = DEFAULTS.feedback_docs
FEEDBACK_TERMS = DEFAULTS.feedback_terms
FEEDBACK_WEIGHT = DEFAULTS.feedback_weight


def relevance(
    bm25: BM25,
    doc_tokens: Sequence[Sequence[str]],
    query_tokens: Sequence[str],
    dense: np.ndarray | None,
    *,
    feedback: bool = True,
    dense_weight: float | None = None,
    method: FusionMethod | None = None,
    params: RankingParams = DEFAULTS,
) -> FloatArray:
    """The whole recipe: hybrid scores, then (optionally) one pseudo-relevance feedback pass.

    `doc_tokens` are the tokens `bm25` was built from; `dense` the cosine scores or None. The
    choices come from `params` (`dense_weight` and `method`, when given, override theirs).
    """
    w = params.dense_weight if dense_weight is None else dense_weight
    how = params.method if method is None else method
    lexical = bm25.scores(query_tokens)
    fused = hybrid_scores(dense, lexical, dense_weight=w, method=how, rrf_k=params.rrf_k)
    if not feedback or params.feedback_docs <= 0 or len(bm25) == 0 or not lexical.any():
        return fused
    top = top_k(fused, params.feedback_docs)
    top = top[fused[top] > 0]  # a hit with no score at all (no dense, no query term) lends nothing
    extra = expand_query(bm25, query_tokens, [doc_tokens[i] for i in top], n_terms=params.feedback_terms)
    if not extra:
        return fused
    lexical = lexical + np.float32(params.feedback_weight) * bm25.scores(extra)
    return hybrid_scores(dense, lexical, dense_weight=w, method=how, rrf_k=params.rrf_k)


# ---------------------------------------------------------------------------------------------
# Priority and recency
# ---------------------------------------------------------------------------------------------

# Additive nudges on a fused score in [0, 1] (the best hit scores about 1). Priority rank 0..3 =
# low, normal, high, critical: low −0.02, normal 0, high +0.02, critical +0.04. Recency adds up to
# +0.02, halving every 30 days since the memory was last updated. The widest possible swing between
# two memories is 0.08 of the score range: it reorders near-ties, never a clearly better hit.
# Measured on LoCoMo (same priority everywhere, real session ages): no cost in recall.
PRIORITY_NUDGE = DEFAULTS.priority_nudge
RECENCY_NUDGE = DEFAULTS.recency_nudge
RECENCY_HALF_LIFE_DAYS = DEFAULTS.recency_half_life_days


def boost(
    scores: np.ndarray, priorities: np.ndarray, age_days: np.ndarray, *, params: RankingParams = DEFAULTS
) -> FloatArray:
    """`scores` nudged for priority (0 low … 3 critical) and recency (days since last update)."""
    s = np.asarray(scores, dtype=np.float32)
    pr = np.clip(np.asarray(priorities, dtype=np.float32), 0.0, 3.0)
    age = np.maximum(np.asarray(age_days, dtype=np.float32), 0.0)
    recency = np.exp2(-age / np.float32(params.recency_half_life_days))
    nudged = s + np.float32(params.priority_nudge) * (pr - 1.0) + np.float32(params.recency_nudge) * recency
    return np.asarray(nudged, dtype=np.float32)
