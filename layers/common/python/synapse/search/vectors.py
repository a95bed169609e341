"""The dense side of search: a mind's stored vectors as one int8 matrix (`Vectors`, built by `index`
straight from the stored bytes), cosine scores against a query (`dense_scores`), and for large
corpora a float32 prefix of the vectors for a fast first pass (`with_prefix`), used only if a
self-check on the mind's own vectors finds it ranks like the full ones (`prefix_agreement`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt

from synapse.store import codec

__all__ = ["Vectors", "cosine_scores", "dense_scores", "index", "prefix_agreement", "with_prefix"]

FloatArray = npt.NDArray[np.float32]
Row = tuple[np.ndarray, float]  # one stored vector: its int8 values and its scale

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


@dataclass
class Vectors:
    """The vectors of one model among a corpus's rows: row `rows[v]` has vector `matrix[v] * scales[v]`
    (rows in increasing order; a row with no vector of the model has none here)."""

    rows: np.ndarray  # intp: the corpus row of each vector
    matrix: np.ndarray  # int8, len(rows) × dim
    scales: np.ndarray  # float32, one per vector
    prefix: np.ndarray | None = None  # float32 first PREFIX_DIMS dims, normalised (large corpora only)
    prefix_refused: bool = False  # the self-check found the prefix ranking unlike the full vectors

    def __len__(self) -> int:
        return len(self.rows)

    # --- one corpus row at a time (the corpus's rows move) -------------------------------------------

    def insert(self, pos: int, vec: Row | None) -> None:
        """A new corpus row at `pos` (the rows from there on move down by one), with vector `vec`."""
        self.rows[self.rows >= pos] += 1
        if vec is not None:
            self._add(self._find(pos)[0], pos, vec)

    def remove(self, pos: int) -> None:
        """The corpus row at `pos` is gone (the rows after it move up by one)."""
        v, has = self._find(pos)
        if has:
            self._drop(v)
        self.rows[self.rows > pos] -= 1

    def replace(self, pos: int, vec: Row | None) -> None:
        """The corpus row at `pos` now has vector `vec` (or none)."""
        v, has = self._find(pos)
        if vec is not None and has:
            self.matrix[v], self.scales[v] = vec
        elif vec is not None:
            self._add(v, pos, vec)
        elif has:
            self._drop(v)

    def _find(self, pos: int) -> tuple[int, bool]:
        v = int(np.searchsorted(self.rows, pos))
        return v, v < len(self.rows) and int(self.rows[v]) == pos

    def _add(self, v: int, pos: int, vec: Row) -> None:
        matrix = self.matrix
        if matrix.ndim != 2 or matrix.shape[1] != len(vec[0]):
            matrix = matrix.reshape(0, len(vec[0]))
        self.rows = np.insert(self.rows, v, pos)
        self.matrix = np.insert(matrix, v, vec[0], axis=0)
        self.scales = np.insert(self.scales, v, vec[1])

    def _drop(self, v: int) -> None:
        self.rows = np.delete(self.rows, v)
        self.matrix = np.delete(self.matrix, v, axis=0)
        self.scales = np.delete(self.scales, v)


def index(embs: Sequence[bytes | None], model_key: str | None) -> Vectors:
    """The stored vectors of `model_key` ("model/dim") among memories' vectors (None: none stored), as
    one matrix. Vectors of another model or size are left out: they are never compared."""
    want_model, _, want_dim = (model_key or "").rpartition("/")
    dim = int(want_dim) if want_dim else 0
    rows = np.arange(len(embs), dtype=np.intp)
    blobs = cast(Sequence[bytes], embs)  # unless there are Nones: taken out below
    if embs.count(None):
        rows = np.array([i for i, e in enumerate(embs) if e is not None], dtype=np.intp)
        blobs = [e for e in embs if e is not None]
    if not blobs or not want_model:
        return Vectors(np.zeros(0, np.intp), np.zeros((0, dim), np.int8), np.zeros(0, np.float32))
    # the model check happens on the bytes, in numpy: touching 10k blobs one by one in Python was
    # half of a cold recall
    found, matrix, scales = codec.decode_matrix(blobs, want_model, dim)
    return Vectors(rows[found], matrix, scales)


def dense_scores(vectors: Vectors, query: np.ndarray, candidates: int) -> np.ndarray:
    """Cosine of `query` with every vector (int8 blocks → float32, one product per block), in the
    order of `vectors.rows`.

    With a prefix (a large corpus reused), every vector is scored on its prefix first; the best
    `candidates` (at least PREFIX_POOL) are then re-scored exactly on the full vectors.
    """
    q = np.asarray(query, dtype=np.float32)
    n = len(vectors.rows)
    pool = max(candidates, PREFIX_POOL)
    if vectors.prefix is not None and n > 4 * pool:
        qp = q[:PREFIX_DIMS] / max(float(np.linalg.norm(q[:PREFIX_DIMS])), 1e-12)
        scores: np.ndarray = vectors.prefix @ qp
        best = np.argpartition(-scores, pool)[:pool]
        exact = (vectors.matrix[best].astype(np.float32) @ q) * vectors.scales[best]
        scores[best] = exact
        return scores
    out = np.empty(n, dtype=np.float32)
    for start in range(0, n, CHUNK_ROWS):
        block = vectors.matrix[start : start + CHUNK_ROWS].astype(np.float32)
        out[start : start + CHUNK_ROWS] = block @ q
    out *= vectors.scales
    return out


def with_prefix(vectors: Vectors) -> Vectors:
    """Add the float32 prefix matrix for fast first passes, once a corpus is reused from the cache.

    A cold recall scores the int8 matrix exactly (building the prefix would cost more than it
    saves once); a warm one pays for the prefix a single time and then scores 6x fewer dims.
    """
    dim = vectors.matrix.shape[1] if vectors.matrix.ndim == 2 else 0
    wanted = vectors.prefix is None and not vectors.prefix_refused
    if wanted and len(vectors.rows) >= PREFIX_MIN_ROWS and dim > PREFIX_DIMS:
        prefix = vectors.matrix[:, :PREFIX_DIMS].astype(np.float32) * vectors.scales[:, None]
        prefix /= np.maximum(np.linalg.norm(prefix, axis=1, keepdims=True), 1e-12)
        if prefix_agreement(vectors.matrix, vectors.scales, prefix) >= PREFIX_MIN_AGREEMENT:
            vectors.prefix = prefix
        else:
            vectors.prefix_refused = True
    return vectors


def prefix_agreement(matrix: np.ndarray, scales: np.ndarray, prefix: np.ndarray) -> float:
    """How well the prefix pass (shortlist of PREFIX_POOL, re-ranked exactly) finds the exact top 10,
    measured on an even sample of the corpus with a few of its own vectors as queries (each query's
    own row left out). 1.0 = the same top 10 every time."""
    n = len(matrix)
    sample = np.linspace(0, n - 1, num=min(n, PREFIX_CHECK_ROWS), dtype=np.intp)
    pool = max(K_CHECK, round(PREFIX_POOL * len(sample) / n))
    own = np.linspace(0, len(sample) - 1, num=PREFIX_CHECK_QUERIES, dtype=np.intp)
    queries = matrix[sample[own]].astype(np.float32) * scales[sample[own], None]
    exact = np.empty((len(sample), len(own)), dtype=np.float32)
    for start in range(0, len(sample), CHUNK_ROWS):
        rows = sample[start : start + CHUNK_ROWS]
        exact[start : start + len(rows)] = matrix[rows].astype(np.float32) @ queries.T
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


def cosine_scores(matrix: np.ndarray, query: np.ndarray) -> FloatArray:
    """Cosine similarity of every row of a float `matrix` with `query` (both already L2-normalised)."""
    if matrix.shape[0] == 0:
        return np.zeros(0, dtype=np.float32)
    m = np.asarray(matrix, dtype=np.float32)
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    return np.asarray(m @ q, dtype=np.float32)
