"""Recall: semantic + full-text recall for a query (POST /memory/recall).

The query's embedding and the identity line are fetched while the mind's corpus loads (the search
engine keeps it in the container and catches it up on writes: search/cache.py); the corpus is scored
by search (search/scoring.py) and the best memories answered.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from synapse.core.models.base import PRIORITY_RANK, Category, Priority, parse_iso, utcnow
from synapse.core.models.chat import RecalledMemory, RecallIn, RecallOut
from synapse.core.principal import Principal
from synapse.core.state import per_container
from synapse.search import cache, scoring
from synapse.search.corpus import Corpus
from synapse.services.account.providers import gemini_key_for
from synapse.services.memory.identity import current as current_identity
from synapse.store.minds import Mind

_PRIORITIES = list(PRIORITY_RANK)


@per_container
def _pool() -> ThreadPoolExecutor:
    # one per container: the query's embedding runs while DynamoDB answers
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="recall")


def recall(who: Principal, mind: Mind, body: RecallIn) -> RecallOut:
    """The most relevant live memories for `query`, and the identity line."""
    from synapse.ai.embeddings import get_embedder

    who.check_user_id(body.userId)
    space = mind.space
    embedder = get_embedder(gemini_key_for(space.user_id))
    query_vec: Future[np.ndarray] | None = None
    model_key = None
    if embedder is not None:
        query_vec = _pool().submit(embedder.embed_query, body.query)
        model_key = f"{embedder.model}/{embedder.dim}"
    identity = _pool().submit(current_identity, space)
    corpus = cache.load(space, model_key)
    now = utcnow().timestamp()
    dense = None
    if query_vec is not None:
        dense = scoring.similarity(corpus, query_vec.result(), candidates=max(200, 20 * body.limit))
    answer = RecallOut(memories=[], identity=identity.result())
    category = body.category.value if body.category is not None else None
    mask = scoring.live(corpus, now, category, body.tags)
    best = scoring.best(corpus, body.query, dense, mask, now, body.limit)
    answer.memories = [_recalled(corpus, i, score) for i, score in best]
    return answer


def _recalled(corpus: Corpus, i: int, score: float) -> RecalledMemory:
    c = corpus.columns
    return RecalledMemory(
        id=c.ids[i],
        text=c.contents[i],
        type=Category(c.categories[i]),
        key=c.keys[i],
        score=round(score, 4),
        priority=Priority(_PRIORITIES[c.priority[i]]),
        verified=c.verified[i],
        created_at=parse_iso(c.created[i]),
    )
