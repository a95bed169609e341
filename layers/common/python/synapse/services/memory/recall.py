"""Recall: semantic + full-text recall for a query (POST /memory/recall).

The query's embedding and the identity line are fetched while the mind's corpus loads (the search
engine keeps it in the container and catches it up on writes: search/cache.py); the corpus is scored
by search (search/scoring.py) and the best memories answered.

Time. A query that names a period ("last week", "in March", "เมื่อวาน") is read by `ai.dates` against
`reference_time` (default now) in the request's timezone, else the mind's; its time words are taken out
of what full-text search looks for (they name no topic), and the relevant memories of that period
rank first (`scoring.best_within`). A query that names none ranks exactly as before (`scoring.best`),
and never reads the mind's record for its timezone. With `as_of`, the memories are scored as they were
then (`asof`): a one-off corpus of their versions of that moment, not cached.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import numpy as np

from synapse.ai import dates
from synapse.core.models.base import DEFAULT_TIMEZONE, PRIORITY_RANK, Category, Priority, parse_iso, utcnow
from synapse.core.models.chat import RecalledMemory, RecallIn, RecallOut
from synapse.core.principal import Principal
from synapse.core.state import per_container
from synapse.search import cache, scoring
from synapse.search import corpus as corpora
from synapse.search.corpus import Corpus
from synapse.services.account.providers import gemini_key_for
from synapse.services.memory import asof
from synapse.services.memory.identity import IDENTITY_CATEGORIES, identity_line
from synapse.services.memory.identity import current as current_identity
from synapse.store import codec
from synapse.store.account.minds import Mind
from synapse.store.keys import Space

if TYPE_CHECKING:
    from synapse.ai.embeddings import Embedder

_PRIORITIES = list(PRIORITY_RANK)


@per_container
def _pool() -> ThreadPoolExecutor:
    # one per container: the query's embedding runs while DynamoDB answers
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="recall")


@dataclass(frozen=True)
class Asked:
    """The period a query names, and what it asks about it: the query without its time words."""

    period: dates.Period
    topic: str

    @property
    def span(self) -> tuple[float, float]:
        return self.period.start.timestamp(), self.period.end.timestamp()


def named_period(
    query: str, reference: datetime, timezone: str | None, mind_zone: Callable[[], str]
) -> Asked | None:
    """The period `query` names, read at `reference` in `timezone` (None: the mind's), or None.

    A query is first read in the timezone given, else UTC: only one that names a time asks for the
    mind's timezone (`mind_zone`, which may read the mind's record)."""
    zone = timezone or DEFAULT_TIMEZONE
    found = dates.query_mentions(query, reference, ZoneInfo(zone))
    if found and timezone is None and (mine := mind_zone()) != zone:
        zone = mine
        found = dates.query_mentions(query, reference, ZoneInfo(zone))
    period = dates.most_specific(found)
    if period is None:
        return None
    # relative words ("last week", "เมื่อวาน") name no topic and match nothing a memory says (its text
    # states dates); an absolute date ("9 November 2022") is kept: a memory may state it
    topic = query
    for m in sorted(found, key=lambda m: m.start, reverse=True):
        if m.relative:
            topic = topic[: m.start] + " " + topic[m.end :]
    return Asked(period, " ".join(topic.split()))


def recall(who: Principal, mind: Mind, body: RecallIn, *, mind_zone: Future[str] | None = None) -> RecallOut:
    """The most relevant live memories for `query`, and the identity line. `mind_zone`: the mind's
    timezone, when the caller is reading it already (context)."""
    from synapse.ai.embeddings import get_embedder

    who.check_user_id(body.userId)
    space = mind.space
    embedder = get_embedder(gemini_key_for(space.user_id))
    query_vec: Future[np.ndarray] | None = None
    model_key = None
    if embedder is not None:
        query_vec = _pool().submit(embedder.embed_query, body.query)
        model_key = f"{embedder.model}/{embedder.dim}"
    identity = _pool().submit(current_identity, space) if body.as_of is None else None
    # (while the embedding and the identity line are fetched)
    zone = mind_zone.result if mind_zone is not None else lambda: mind.timezone
    asked = named_period(body.query, body.reference_time or utcnow(), body.timezone, zone)
    corpus = cache.load(space, model_key)
    moment = body.as_of or utcnow()
    if body.as_of is not None:
        corpus = as_of(space, corpus, body.as_of, embedder)
    now = moment.timestamp()
    dense = None
    if query_vec is not None:
        dense = scoring.similarity(corpus, query_vec.result(), candidates=max(200, 20 * body.limit))
    category = body.category.value if body.category is not None else None
    mask = scoring.live(corpus, now, category, body.tags)
    if asked is None:
        best = scoring.best(corpus, body.query, dense, mask, now, body.limit)
    else:
        best = scoring.best_within(corpus, asked.topic, dense, mask, now, body.limit, asked.span)
    if identity is not None:
        line = identity.result()
    else:  # the identity line of that moment, from the memories as they were
        then = [m for m in corpora.memories_of(corpus, IDENTITY_CATEGORIES, space) if m.is_live(moment)]
        line = identity_line(then)
    return RecallOut(memories=[_recalled(corpus, i, score) for i, score in best], identity=line)


def as_of(space: Space, current: Corpus, moment: datetime, embedder: Embedder | None) -> Corpus:
    """The mind's corpus as it was at `moment`: memories created later left out, each memory updated
    since replaced by its version of then (one history Query each; left out when that version is
    no longer kept). An older text gets a vector of its own, embedded with the others in one call;
    a version whose text is the current one keeps the current vector."""
    c = current.columns
    at = moment.timestamp()
    existed = corpora.epochs(c.created) <= at if len(c) else np.zeros(0, dtype=bool)
    stale = np.flatnonzero(existed & (current.updated > at)).tolist()
    versions = asof.versions_at(space, [c.ids[i] for i in stale], moment)
    older = [i for i in stale if versions[c.ids[i]] is not None]
    lost = set(stale) - set(older)
    rows = [i for i in np.flatnonzero(existed).tolist() if i not in lost]
    position = {row: pos for pos, row in enumerate(rows)}
    changed = c.take(older)
    changed.embs = [None] * len(older)
    texts: list[tuple[int, str]] = []  # (row of `changed`, an older text) to embed
    for k, i in enumerate(older):
        v = versions[c.ids[i]]
        assert v is not None
        changed.contents[k], changed.tags[k], changed.verified[k] = v.content, list(v.tags), v.verified
        changed.priority[k] = PRIORITY_RANK[v.priority]
        changed.updated[k] = v.updated_at.timestamp()
        changed.expires[k] = v.expires_at.timestamp() if v.expires_at is not None else float("inf")
        changed.valid[k] = v.valid_at.timestamp() if v.valid_at is not None else float("-inf")
        if v.content != c.contents[i]:
            texts.append((k, v.content))
    if texts and embedder is not None:
        found = embedder.embed_documents([text for _, text in texts])
        for (k, _), vec in zip(texts, found, strict=True):
            changed.embs[k] = codec.make_vector(vec, embedder.model).data
    return corpora.view(current, rows, changed, [position[i] for i in older])


def _recalled(corpus: Corpus, i: int, score: float) -> RecalledMemory:
    c = corpus.columns
    valid = c.valid[i]
    return RecalledMemory(
        id=c.ids[i],
        text=c.contents[i],
        type=Category(c.categories[i]),
        key=c.keys[i],
        score=round(score, 4),
        priority=Priority(_PRIORITIES[c.priority[i]]),
        verified=c.verified[i],
        created_at=parse_iso(c.created[i]),
        valid_at=datetime.fromtimestamp(valid, tz=UTC) if valid != float("-inf") else None,
    )
