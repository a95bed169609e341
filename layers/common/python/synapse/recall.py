"""Recall: semantic + full-text recall for a query, and the plain-text rendering for an LLM."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from functools import cache

import numpy as np

from synapse import store
from synapse.auth import Principal
from synapse.models import PRIORITY_RANK, Memory, RecalledMemory, RecallIn, RecallOut, utcnow
from synapse.providers import gemini_key_for


@cache
def _pool() -> ThreadPoolExecutor:
    # one per container: the query's embedding runs while DynamoDB answers
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="recall")


def recall(who: Principal, body: RecallIn) -> RecallOut:
    """The most relevant live memories for `query`, and the identity line."""
    from synapse.embeddings import get_embedder
    from synapse.memories import document_text
    from synapse.ranking import BM25, boost, cosine_scores, hybrid_scores, tokenize, top_k

    user_id = who.check_user_id(body.userId)
    embedder = get_embedder(gemini_key_for(user_id))
    query_vec = _pool().submit(embedder.embed_query, body.query) if embedder is not None else None
    identity = _pool().submit(store.get_identity, user_id)
    now = utcnow()
    flt = store.MemoryFilter(category=body.category, live_at=now)
    rows = store.scoring_rows(user_id, flt)
    keep = _with_tags(rows.memories, body.tags)
    memories = [rows.memories[i] for i in keep]
    answer = RecallOut(memories=[], identity=identity.result())
    if not memories:
        if query_vec is not None:
            query_vec.result()
        return answer
    texts = [document_text(m.category, m.key, m.content) + " " + " ".join(m.tags) for m in memories]
    lexical = BM25([tokenize(t) for t in texts]).scores(tokenize(body.query))
    dense = None
    if query_vec is not None and embedder is not None:
        q = query_vec.result()
        wanted = f"{embedder.model}/{q.shape[0]}"
        # vectors of another model (or size) are never compared: they score as unrelated
        dense = np.full(len(memories), -1.0, dtype=np.float32)
        usable = [j for j, i in enumerate(keep) if rows.models[i] == wanted and rows.vectors[i] is not None]
        if usable:
            matrix = np.vstack([store.decode_vector(rows.vectors[keep[j]] or b"") for j in usable])
            dense[usable] = cosine_scores(matrix, q)
    fused = hybrid_scores(dense, lexical)
    scores = boost(
        fused,
        np.array([PRIORITY_RANK[m.priority] for m in memories]),
        np.array([_age_days(m, now) for m in memories]),
    )
    best = top_k(scores, body.limit)
    answer.memories = [_recalled(memories[int(i)], float(scores[int(i)])) for i in best]
    return answer


def _with_tags(memories: list[Memory], tags: list[str] | None) -> list[int]:
    """Indices of memories carrying any of `tags` (all of them when no tags are given)."""
    if not tags:
        return list(range(len(memories)))
    wanted = set(tags)
    return [i for i, m in enumerate(memories) if wanted.intersection(m.tags)]


def _age_days(memory: Memory, now: datetime) -> float:
    return max((now - memory.updated_at).total_seconds(), 0.0) / 86400.0


def _recalled(memory: Memory, score: float) -> RecalledMemory:
    return RecalledMemory(
        id=memory.id,
        text=memory.content,
        type=memory.category,
        key=memory.key,
        score=round(score, 4),
        priority=memory.priority,
        verified=memory.verified,
        created_at=memory.created_at,
    )


def render_text(user_id: str, matching: list[Memory], limit: int) -> str:
    """The `GET /memory/recall` text (API.md): a header, then one numbered block per memory.

    `matching` is every live memory that matched, already sorted (priority, then most recently
    updated); the header counts all of them, the first `limit` are shown.
    """
    verified = sum(1 for m in matching if m.verified)
    lines = [
        f"Mind: {user_id}",
        f"Memories: {len(matching)} total ({verified} verified, {len(matching) - verified} unverified)",
    ]
    for n, m in enumerate(matching[:limit], start=1):
        state = "verified" if m.verified else "unverified"
        lines.append("")
        lines.append(f"[{n:03d}] {m.category.value} ({m.priority.value.upper()}) [{state}] {m.key}")
        lines.extend(f"    {line}" for line in m.content.splitlines() or [""])
        if m.tags:
            lines.append(f"    Tags: {', '.join(m.tags)}")
    return "\n".join(lines) + "\n"
