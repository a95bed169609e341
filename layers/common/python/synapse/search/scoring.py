"""A query against a corpus (POST /memory/recall): the similarity of the query's vector to each
memory's, the live filter, and the best memories by relevance (hybrid + feedback, `fusion.relevance`)
nudged for priority and recency (`fusion.boost`); for a query that names a period, the memories
of that period lifted above the others (`best_within`). And full-text search alone over some memories
(GET /memory/search).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from synapse.search import fusion, tokenizer, vectors
from synapse.search.bm25 import BM25

if TYPE_CHECKING:
    from synapse.search.corpus import Corpus

__all__ = ["best", "best_within", "full_text", "live", "similarity"]

_DAY = 86400.0


def similarity(corpus: Corpus, query: np.ndarray, candidates: int) -> np.ndarray:
    """The cosine of the query's vector with every memory's (-1, unrelated, for a memory with no
    vector of the corpus's model); `candidates`: how many a prefix first pass re-scores exactly."""
    out = np.full(len(corpus), -1.0, dtype=np.float32)
    if len(corpus.vectors):
        out[corpus.vectors.rows] = vectors.dense_scores(corpus.vectors, query, candidates)
    return out


def live(corpus: Corpus, now: float, category: str | None, tags: Sequence[str] | None) -> np.ndarray:
    """Which memories are live at `now` (epoch seconds), of the category, carrying any of the tags."""
    mask: np.ndarray = corpus.expires > now
    if category is not None:
        mask &= np.array([c == category for c in corpus.columns.categories], dtype=bool)
    if tags:
        wanted = set(tags)
        mask &= np.array([bool(wanted.intersection(t)) for t in corpus.columns.tags], dtype=bool)
    return mask


def best(
    corpus: Corpus, query: str, dense: np.ndarray | None, mask: np.ndarray, now: float, limit: int
) -> list[tuple[int, float]]:
    """The best `limit` rows among `mask` for the query text and its dense scores (None: no embedder),
    best first, with their scores: relevance nudged for priority and recency (days since `now`)."""
    if not mask.any():
        return []
    scores = fusion.relevance(corpus.bm25, corpus.tokens, tokenizer.tokenize(query), dense)
    age_days = np.maximum(now - corpus.updated, 0.0) / _DAY
    scores = fusion.boost(scores, corpus.priority, age_days)
    scores = np.where(mask, scores, -np.inf).astype(np.float32)
    return [(int(i), float(scores[i])) for i in fusion.top_k(scores, min(limit, int(mask.sum())))]


def best_within(
    corpus: Corpus,
    query: str,
    dense: np.ndarray | None,
    mask: np.ndarray,
    now: float,
    limit: int,
    period: tuple[float, float],
    *,
    params: fusion.RankingParams = fusion.DEFAULTS,
) -> list[tuple[int, float]]:
    """`best` for a query that names a period [start, end) (epoch seconds): a memory whose moment
    (`corpus.when`: valid_at, else created_at) is in the period adds `params.period_boost` to its
    score (`period_boost_lexical` when there is no vector: full text alone). So a memory of the
    period ranks above every memory outside it that is not more relevant by more than that: with
    the defaults (meaning and words weighed 0.5 each, min-max normalized; boost 0.4), a memory outside
    the period passes one inside it only when it is better on both, or far better on one (in a mind of
    a few memories, min-max normalization can make that happen between unrelated texts).
    `query` is the topic: the question without its time words. The scores answered include the boost
    (they decrease down the list)."""
    if not mask.any():
        return []
    scores = fusion.relevance(corpus.bm25, corpus.tokens, tokenizer.tokenize(query), dense, params=params)
    age_days = np.maximum(now - corpus.updated, 0.0) / _DAY
    scores = fusion.boost(scores, corpus.priority, age_days, params=params)
    start, end = period
    inside = (corpus.when >= start) & (corpus.when < end)
    lift = np.float32(params.period_boost if dense is not None else params.period_boost_lexical)
    scores = np.where(mask, scores + lift * inside, -np.inf).astype(np.float32)
    return [(int(i), float(scores[i])) for i in fusion.top_k(scores, min(limit, int(mask.sum())))]


def full_text(
    docs: Sequence[tuple[str, str, Sequence[str]]], query: str, limit: int
) -> list[tuple[int, float]]:
    """BM25 alone over some memories' (content, key, tags): the best `limit` that match any query
    term, best first, with their scores."""
    terms = tokenizer.tokenize(query)
    if not docs or not terms:
        return []
    index = BM25([tokenizer.tokenize(tokenizer.search_text(*doc)) for doc in docs])
    scores = index.scores(terms)
    return [(int(i), float(scores[i])) for i in fusion.top_k(scores, limit) if scores[int(i)] > 0]
