"""Recall: semantic + full-text recall for a query, and the plain-text rendering for an LLM.

A recall scores every memory of the mind. The memories are read once into a `Corpus` (columns,
a BM25 index, and the vectors as one int8 matrix) that stays in the container and is checked
against the mind's version (epoch, seq), which every write moves: a recall with nothing changed
reads one small item; after writes it reads the change log past its seq and those memories only,
and updates the corpus row by row.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import numpy as np

from synapse.core.config import settings
from synapse.core.models.base import PRIORITY_RANK, Category, Priority, Source, parse_iso, utcnow
from synapse.core.models.chat import RecalledMemory, RecallIn, RecallOut
from synapse.core.models.memory import Memory
from synapse.core.principal import Principal
from synapse.core.state import on_reset, per_container
from synapse.services.account.providers import gemini_key_for
from synapse.services.memory.identity import current as current_identity
from synapse.store import changelog, codec, nuggets
from synapse.store.keys import Space
from synapse.store.minds import Mind

PREFIX_DIMS = 128  # first pass over a large matrix: a prefix of the vector (Gemini embeddings are
# Matryoshka-trained, so a prefix ranks nearly as well); the product reads 4 bytes × 128 a row
PREFIX_POOL = 1000  # the first pass's shortlist, re-scored exactly on the full vectors: wide enough
# that the exact top 10 is in it (docs/performance.md: 1000 at 128 dims agrees as well as 200 at 256)
PREFIX_MIN_ROWS = 20_000  # below this an exact pass is as fast
# the prefix is used only if it ranks like the full vectors on the user's own vectors: a model that
# is not Matryoshka-trained (or an unusual corpus) keeps the exact pass
PREFIX_CHECK_QUERIES = 4  # stored vectors taken as queries
PREFIX_CHECK_ROWS = 20_000  # an even sample of the corpus, the pool scaled to it
PREFIX_MIN_AGREEMENT = 0.9  # mean top-10 overlap with the exact ranking
K_CHECK = 10  # the self-check compares top 10s, as recall returns
CHUNK_ROWS = 1024  # int8 → float32 a block at a time, so the block stays in cache
CACHE_MAX_ROWS = 200_000  # memories kept across all cached users of a container
CATCH_UP_MIN = 64  # changed memories a catch-up reads one by one at least (else a full read)
_FAR_FUTURE = float("inf")
_PRIORITIES = {rank: priority for priority, rank in PRIORITY_RANK.items()}


@per_container
def _pool() -> ThreadPoolExecutor:
    # one per container: the query's embedding runs while DynamoDB answers
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="recall")


@dataclass
class Corpus:
    """One user's memories, as columns ready for scoring."""

    version: str
    model_key: str | None
    ids: list[str]
    categories: list[str]
    keys: list[str]
    contents: list[str]
    tags: list[list[str]]
    verified: np.ndarray  # bool
    priority: np.ndarray  # 0 low … 3 critical
    created: list[str]
    updated: np.ndarray  # epoch seconds
    expires: np.ndarray  # epoch seconds, inf when never
    tokens: list[list[str]]
    bm25: Any
    vec_rows: np.ndarray  # indices of memories whose vector is of `model_key`
    vectors: np.ndarray  # int8, len(vec_rows) × dim
    scales: np.ndarray  # float32 per vector row
    prefix: np.ndarray | None  # float32 first PREFIX_DIMS dims (only for large corpora)
    prefix_refused: bool = False  # the self-check found the prefix ranking unlike the full vectors
    at: changelog.Version | None = None  # the mind's version it was read at (None: not from the cache)

    def __len__(self) -> int:
        return len(self.ids)


def build_corpus(
    cols: nuggets.Columns, version: str, model_key: str | None, previous: Corpus | None = None
) -> Corpus:
    """A mind's memories as columns → a Corpus (a BM25 index, the vectors as one int8 matrix).

    `previous`, the mind's corpus before the latest writes, lends the tokens of every memory whose
    searchable text (content, key, tags) is unchanged: after one write, one memory is tokenized
    instead of all of them (tokenizing was half of a rebuild)."""
    from synapse.search.ranking import BM25, search_text, tokenize

    vec_rows, vectors, scales = vector_index(cols.embs, model_key)
    # id → (content, key, tags, tokens) of the corpus before the latest writes
    known = {row[0]: row[1:] for row in _texts(previous)} if previous is not None else {}
    tokens = []
    for mem_id, content, key, tag_list in zip(cols.ids, cols.contents, cols.keys, cols.tags, strict=True):
        seen = known.get(mem_id)
        if seen is not None and seen[:3] == (content, key, tag_list):
            tokens.append(seen[3])
        else:
            tokens.append(tokenize(search_text(content, key, tag_list)))
    return Corpus(
        version=version,
        model_key=model_key,
        ids=cols.ids,
        categories=cols.categories,
        keys=cols.keys,
        contents=cols.contents,
        tags=cols.tags,
        verified=np.array(cols.verified, dtype=bool),
        priority=np.array(cols.priority, dtype=np.int8),
        created=cols.created,
        updated=np.array(cols.updated, dtype=np.float64),
        expires=np.array(cols.expires, dtype=np.float64),
        tokens=tokens,
        bm25=BM25(tokens),
        vec_rows=vec_rows,
        vectors=vectors,
        scales=scales,
        prefix=None,
    )


def _texts(corpus: Corpus) -> Iterable[tuple[str, str, str, list[str], list[str]]]:
    """(id, content, key, tags, tokens) of every memory of a corpus."""
    return zip(corpus.ids, corpus.contents, corpus.keys, corpus.tags, corpus.tokens, strict=True)


def with_prefix(corpus: Corpus) -> Corpus:
    """Add the float32 prefix matrix for fast first passes, once a corpus is reused from the cache.

    A cold recall scores the int8 matrix exactly (building the prefix would cost more than it
    saves once); a warm one pays for the prefix a single time and then scores 6x fewer dims.
    """
    dim = corpus.vectors.shape[1] if corpus.vectors.ndim == 2 else 0
    wanted = corpus.prefix is None and not corpus.prefix_refused
    if wanted and len(corpus.vec_rows) >= PREFIX_MIN_ROWS and dim > PREFIX_DIMS:
        prefix = corpus.vectors[:, :PREFIX_DIMS].astype(np.float32) * corpus.scales[:, None]
        prefix /= np.maximum(np.linalg.norm(prefix, axis=1, keepdims=True), 1e-12)
        if prefix_agreement(corpus.vectors, corpus.scales, prefix) >= PREFIX_MIN_AGREEMENT:
            corpus.prefix = prefix
        else:
            corpus.prefix_refused = True
    return corpus


def prefix_agreement(vectors: np.ndarray, scales: np.ndarray, prefix: np.ndarray) -> float:
    """How well the prefix pass (shortlist of PREFIX_POOL, re-ranked exactly) finds the exact top 10,
    measured on an even sample of the corpus with a few of its own vectors as queries (each query's
    own row left out). 1.0 = the same top 10 every time."""
    n = len(vectors)
    sample = np.linspace(0, n - 1, num=min(n, PREFIX_CHECK_ROWS), dtype=np.intp)
    pool = max(K_CHECK, round(PREFIX_POOL * len(sample) / n))
    own = np.linspace(0, len(sample) - 1, num=PREFIX_CHECK_QUERIES, dtype=np.intp)
    queries = vectors[sample[own]].astype(np.float32) * scales[sample[own], None]
    exact = np.empty((len(sample), len(own)), dtype=np.float32)
    for start in range(0, len(sample), CHUNK_ROWS):
        rows = sample[start : start + CHUNK_ROWS]
        exact[start : start + len(rows)] = vectors[rows].astype(np.float32) @ queries.T
    exact *= scales[sample, None]
    approx = prefix[sample] @ (prefix[sample[own]].T)
    exact[own, np.arange(len(own))] = approx[own, np.arange(len(own))] = -np.inf
    found = 0
    for j in range(len(own)):
        shortlist = np.argpartition(-approx[:, j], pool)[:pool]
        mine = shortlist[np.argpartition(-exact[shortlist, j], K_CHECK)[:K_CHECK]]
        truth = np.argpartition(-exact[:, j], K_CHECK)[:K_CHECK]
        found += len(np.intersect1d(mine, truth))
    return found / (K_CHECK * len(own))


def vector_index(
    embs: Sequence[bytes | None], model_key: str | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stored vectors of `model_key` ("model/dim") among memories' vectors (None: none stored) →
    (row indices, int8 matrix, scales). Vectors of another model or size are left out: they are
    never compared."""
    want_model, _, want_dim = (model_key or "").rpartition("/")
    dim = int(want_dim) if want_dim else 0
    rows = np.arange(len(embs), dtype=np.intp)
    blobs = cast(Sequence[bytes], embs)  # unless there are Nones: taken out below
    if embs.count(None):
        rows = np.array([i for i, e in enumerate(embs) if e is not None], dtype=np.intp)
        blobs = [e for e in embs if e is not None]
    if not blobs or not want_model:
        return np.zeros(0, np.intp), np.zeros((0, dim), np.int8), np.zeros(0, np.float32)
    # the model check happens on the bytes, in numpy: touching 10k blobs one by one in Python was
    # half of a cold recall
    index, vectors, scales = codec.decode_matrix(blobs, want_model, dim)
    return rows[index], vectors, scales


def dense_scores(corpus: Corpus, query: np.ndarray, candidates: int) -> np.ndarray:
    """Cosine of `query` with every vector row (int8 blocks → float32, one product per block).

    A large corpus is scored on its cached vector prefix first; the best `candidates` (at least
    PREFIX_POOL) are then re-scored exactly on the full vectors.
    """
    q = np.asarray(query, dtype=np.float32)
    n = len(corpus.vec_rows)
    pool = max(candidates, PREFIX_POOL)
    if corpus.prefix is not None and n > 4 * pool:
        qp = q[:PREFIX_DIMS] / max(float(np.linalg.norm(q[:PREFIX_DIMS])), 1e-12)
        scores: np.ndarray = corpus.prefix @ qp
        best = np.argpartition(-scores, pool)[:pool]
        exact = (corpus.vectors[best].astype(np.float32) @ q) * corpus.scales[best]
        scores[best] = exact
        return scores
    out = np.empty(n, dtype=np.float32)
    for start in range(0, n, CHUNK_ROWS):
        block = corpus.vectors[start : start + CHUNK_ROWS].astype(np.float32)
        out[start : start + CHUNK_ROWS] = block @ q
    out *= corpus.scales
    return out


class _CorpusCache:
    """Per-container LRU of users' corpora, bounded by the number of memories held."""

    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self._data: OrderedDict[tuple[str, str | None], Corpus] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, user_id: str, model_key: str | None, version: str) -> Corpus | None:
        with self._lock:
            corpus = self._data.get((user_id, model_key))
            if corpus is None or corpus.version != version:
                return None
            self._data.move_to_end((user_id, model_key))
            return corpus

    def stale(self, user_id: str, model_key: str | None) -> Corpus | None:
        """The user's cached corpus whatever its version (to lend a rebuild what did not change)."""
        with self._lock:
            return self._data.get((user_id, model_key))

    def put(self, user_id: str, corpus: Corpus) -> None:
        with self._lock:
            self._data[(user_id, corpus.model_key)] = corpus
            self._data.move_to_end((user_id, corpus.model_key))
            while len(self._data) > 1 and sum(len(c) for c in self._data.values()) > self.max_rows:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


CACHE = _CorpusCache(CACHE_MAX_ROWS)
on_reset(CACHE.clear)


def catch_up_limit(rows: int) -> int:
    """Past this many changed memories a full read is about as cheap as reading them one by one."""
    return max(CATCH_UP_MIN, rows // 4)


def load_corpus(space: Space, model_key: str | None) -> Corpus:
    """The mind's corpus, kept in the container: as it is when the mind's version has not moved;
    else brought up to date from the change log with the changed memories only (`apply`); read
    whole when there is none yet, or the log cannot tell what changed (another epoch, too far)."""
    if not settings().recall_cache:
        return build_corpus(nuggets.read_columns(space), "", model_key)
    owner = _cache_key(space)
    at = changelog.read(space)
    corpus = CACHE.stale(owner, model_key)
    if corpus is not None and corpus.at is not None:
        if corpus.at == at:
            return with_prefix(corpus)
        ids = changelog.changed_ids(space, corpus.at, at)
        if ids is not None and len(ids) <= catch_up_limit(len(corpus)):
            apply(corpus, nuggets.read_columns_of(space, ids), ids, at)
            CACHE.put(owner, corpus)
            return with_prefix(corpus)
    # the version is read before the memories: a write landing in between is in the corpus already,
    # and read again (harmlessly) at the next catch-up
    corpus = build_corpus(nuggets.read_columns(space), at.token, model_key, corpus)
    corpus.at = at
    CACHE.put(owner, corpus)
    return corpus


def apply(corpus: Corpus, changed: nuggets.Columns, ids: Sequence[str], at: changelog.Version) -> None:
    """Bring a corpus up to date with memories `ids` as `changed` holds them now (an id missing from
    it was deleted): O(k) row inserts, replacements and removals, BM25 statistics and matrix rows
    included. Rows stay in id order, as a fresh read has them, so the corpus is the one a full
    build would make (tests/integration/test_incremental_corpus.py)."""
    from synapse.search.ranking import search_text, tokenize

    now = {mem_id: j for j, mem_id in enumerate(changed.ids)}
    rows, vectors, scales = vector_index(changed.embs, corpus.model_key)
    vector_of = {int(r): k for k, r in enumerate(rows)}
    for mem_id in dict.fromkeys(ids):
        pos = bisect_left(corpus.ids, mem_id)
        here = pos < len(corpus.ids) and corpus.ids[pos] == mem_id
        j = now.get(mem_id)
        if j is None:
            if here:
                _remove_row(corpus, pos)
            continue
        tokens = tokenize(search_text(changed.contents[j], changed.keys[j], changed.tags[j]))
        k = vector_of.get(j)
        vec = (vectors[k], scales[k]) if k is not None else None
        if here:
            _set_row(corpus, pos, changed, j, tokens, vec)
        else:
            _insert_row(corpus, pos, changed, j, tokens, vec)
    corpus.prefix = None  # (rebuilt from the matrix by `with_prefix` where it pays)
    corpus.version, corpus.at = at.token, at


def memories_of(corpus: Corpus, categories: Iterable[str], space: Space) -> list[Memory]:
    """The corpus's memories of some categories as memory objects, for what needs only their text,
    priority and times (the identity line): source and confidence are not kept in a corpus (the
    objects say agent and 1.0)."""
    wanted = set(categories)
    return [
        Memory(
            id=corpus.ids[i],
            category=Category(corpus.categories[i]),
            key=corpus.keys[i],
            content=corpus.contents[i],
            tags=corpus.tags[i],
            priority=_PRIORITIES[int(corpus.priority[i])],
            source=Source.agent,
            verified=bool(corpus.verified[i]),
            confidence=1.0,
            expires_at=None if corpus.expires[i] == _FAR_FUTURE else _utc(float(corpus.expires[i])),
            user_id=space.user_id,
            created_at=parse_iso(corpus.created[i]),
            updated_at=_utc(float(corpus.updated[i])),
            mind_id=space.mind_id,
        )
        for i in range(len(corpus))
        if corpus.categories[i] in wanted
    ]


def _utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


_LISTS = ("ids", "categories", "keys", "contents", "tags", "created")
_ARRAYS = ("verified", "priority", "updated", "expires")


def _row_values(changed: nuggets.Columns, j: int) -> dict[str, Any]:
    return {
        "ids": changed.ids[j],
        "categories": changed.categories[j],
        "keys": changed.keys[j],
        "contents": changed.contents[j],
        "tags": changed.tags[j],
        "created": changed.created[j],
        "verified": changed.verified[j],
        "priority": changed.priority[j],
        "updated": changed.updated[j],
        "expires": changed.expires[j],
    }


def _vector_position(corpus: Corpus, pos: int) -> tuple[int, bool]:
    v = int(np.searchsorted(corpus.vec_rows, pos))
    return v, v < len(corpus.vec_rows) and int(corpus.vec_rows[v]) == pos


def _remove_row(corpus: Corpus, pos: int) -> None:
    corpus.bm25.remove(pos, corpus.tokens[pos])
    del corpus.tokens[pos]
    for name in _LISTS:
        del getattr(corpus, name)[pos]
    for name in _ARRAYS:
        setattr(corpus, name, np.delete(getattr(corpus, name), pos))
    v, has = _vector_position(corpus, pos)
    if has:
        corpus.vec_rows = np.delete(corpus.vec_rows, v)
        corpus.vectors = np.delete(corpus.vectors, v, axis=0)
        corpus.scales = np.delete(corpus.scales, v)
    corpus.vec_rows[corpus.vec_rows > pos] -= 1


def _insert_row(
    corpus: Corpus, pos: int, changed: nuggets.Columns, j: int, tokens: list[str], vec: Any
) -> None:
    corpus.bm25.insert(pos, tokens)
    corpus.tokens.insert(pos, tokens)
    for name, value in _row_values(changed, j).items():
        if name in _LISTS:
            getattr(corpus, name).insert(pos, value)
        else:
            setattr(corpus, name, np.insert(getattr(corpus, name), pos, value))
    corpus.vec_rows[corpus.vec_rows >= pos] += 1
    if vec is not None:
        v, _ = _vector_position(corpus, pos)
        corpus.vec_rows = np.insert(corpus.vec_rows, v, pos)
        corpus.vectors = _insert_vector(corpus.vectors, v, vec[0])
        corpus.scales = np.insert(corpus.scales, v, vec[1])


def _insert_vector(matrix: np.ndarray, v: int, row: np.ndarray) -> np.ndarray:
    if matrix.ndim != 2 or matrix.shape[1] != len(row):
        matrix = matrix.reshape(0, len(row))
    return np.insert(matrix, v, row, axis=0)


def _set_row(corpus: Corpus, pos: int, changed: nuggets.Columns, j: int, tokens: list[str], vec: Any) -> None:
    corpus.bm25.replace(pos, corpus.tokens[pos], tokens)
    corpus.tokens[pos] = tokens
    for name, value in _row_values(changed, j).items():
        getattr(corpus, name)[pos] = value
    v, has = _vector_position(corpus, pos)
    if vec is not None and has:
        corpus.vectors[v], corpus.scales[v] = vec
    elif vec is not None:
        corpus.vec_rows = np.insert(corpus.vec_rows, v, pos)
        corpus.vectors = _insert_vector(corpus.vectors, v, vec[0])
        corpus.scales = np.insert(corpus.scales, v, vec[1])
    elif has:
        corpus.vec_rows = np.delete(corpus.vec_rows, v)
        corpus.vectors = np.delete(corpus.vectors, v, axis=0)
        corpus.scales = np.delete(corpus.scales, v)


def _cache_key(space: Space) -> str:
    return space.user_id if space.is_default else f"{space.user_id}\x1f{space.mind_id}"


def recall(who: Principal, mind: Mind, body: RecallIn) -> RecallOut:
    """The most relevant live memories for `query`, and the identity line."""
    from synapse.ai.embeddings import get_embedder
    from synapse.search.ranking import boost, relevance, tokenize, top_k

    who.check_user_id(body.userId)
    space = mind.space
    embedder = get_embedder(gemini_key_for(space.user_id))
    query_vec: Future[np.ndarray] | None = None
    model_key = None
    if embedder is not None:
        query_vec = _pool().submit(embedder.embed_query, body.query)
        model_key = f"{embedder.model}/{embedder.dim}"
    identity = _pool().submit(current_identity, space)
    corpus = load_corpus(space, model_key)
    now = utcnow()
    dense = None
    if query_vec is not None:
        q = query_vec.result()
        dense = np.full(len(corpus), -1.0, dtype=np.float32)  # no vector of this model: unrelated
        if len(corpus.vec_rows):
            dense[corpus.vec_rows] = dense_scores(corpus, q, candidates=max(200, 20 * body.limit))
    answer = RecallOut(memories=[], identity=identity.result())
    mask = _mask(corpus, body.category, body.tags, now)
    if not mask.any():
        return answer
    scores = relevance(corpus.bm25, corpus.tokens, tokenize(body.query), dense)
    age_days = np.maximum(now.timestamp() - corpus.updated, 0.0) / 86400.0
    scores = boost(scores, corpus.priority, age_days)
    scores = np.where(mask, scores, -np.inf).astype(np.float32)
    best = [int(i) for i in top_k(scores, min(body.limit, int(mask.sum())))]
    answer.memories = [_recalled(corpus, i, float(scores[i])) for i in best]
    return answer


def _mask(corpus: Corpus, category: Category | None, tags: list[str] | None, now: datetime) -> np.ndarray:
    """Live memories, of the category, carrying any of the tags."""
    mask: np.ndarray = corpus.expires > now.timestamp()
    if category is not None:
        mask &= np.array([c == category.value for c in corpus.categories], dtype=bool)
    if tags:
        wanted = set(tags)
        mask &= np.array([bool(wanted.intersection(t)) for t in corpus.tags], dtype=bool)
    return mask


def _recalled(corpus: Corpus, i: int, score: float) -> RecalledMemory:
    return RecalledMemory(
        id=corpus.ids[i],
        text=corpus.contents[i],
        type=Category(corpus.categories[i]),
        key=corpus.keys[i],
        score=round(score, 4),
        priority=Priority(list(PRIORITY_RANK)[int(corpus.priority[i])]),
        verified=bool(corpus.verified[i]),
        created_at=parse_iso(corpus.created[i]),
    )
