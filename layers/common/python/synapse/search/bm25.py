"""Okapi BM25 over postings (term → documents and counts), scoring every document for a query, and
changing one document at a time (`insert`, `remove`, `replace`) at the cost of that document's terms.

numpy only: no AWS, fast to import. k1 and b default to the service's values (`fusion.RankingParams`
holds every tunable choice and says why these; docs/ranking.md has the measurements).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator, MutableMapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["BM25", "K1", "B"]

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.intp]
Posting = tuple[IntArray, FloatArray]  # a term's documents (slots) and its frequency in each
K1 = 0.9
B = 0.5


class BM25:
    """Okapi BM25 over a list of documents (each a list of tokens) that can change one document at a
    time: `insert`, `remove` and `replace` cost what that document's terms cost, not a rebuild.

    IDF is Lucene's, ``log(1 + (N - df + 0.5) / (df + 0.5))``, always positive. Postings hold each
    term's documents and counts; the weights (which depend on N, df and the mean length) are computed
    when a query scores its terms, one vectorised expression per term. Documents are kept in slots
    that never move; `_row` maps a slot to the document's position, so inserting or removing one
    shifts positions in one numpy pass instead of rewriting every posting. Scores depend only on the
    documents and their positions: a BM25 changed step by step scores exactly like one built anew.
    """

    __slots__ = (
        "_free", "_lengths", "_postings", "_row", "_slot", "_stats", "_weights",
        "b", "k1", "n_docs", "total_len",
    )  # fmt: skip

    def __init__(self, docs: Sequence[Sequence[str]], *, k1: float = K1, b: float = B) -> None:
        self.k1 = k1
        self.b = b
        self.n_docs = len(docs)
        lengths = np.fromiter((len(d) for d in docs), dtype=np.float32, count=self.n_docs)
        self.total_len = int(lengths.sum())
        # Vectorised build: term ids for every token, then (term, doc) pairs counted by np.unique.
        vocab: dict[str, int] = {}
        term_ids = np.fromiter(
            (vocab.setdefault(t, len(vocab)) for doc in docs for t in doc),
            dtype=np.int64,
            count=self.total_len,
        )
        doc_ids = np.repeat(np.arange(self.n_docs, dtype=np.int64), lengths.astype(np.int64))
        pairs, counts = np.unique(term_ids * max(self.n_docs, 1) + doc_ids, return_counts=True)
        p_term = pairs // max(self.n_docs, 1)
        p_doc = pairs % max(self.n_docs, 1)
        df = np.bincount(p_term, minlength=len(vocab))
        bounds = np.concatenate(([0], np.cumsum(df).astype(np.int64)))
        tf = counts.astype(np.float32)
        self._postings: MutableMapping[str, Posting] = {
            term: (p_doc[bounds[tid] : bounds[tid + 1]], tf[bounds[tid] : bounds[tid + 1]])
            for term, tid in vocab.items()
        }
        self._lengths = lengths  # by slot
        self._row = np.arange(self.n_docs, dtype=np.int64)  # slot → position (-1: a free slot)
        self._slot: list[int] = list(range(self.n_docs))  # position → slot
        self._free: list[int] = []
        # each queried term's weights, valid while (n_docs, total_len) and its posting are unchanged:
        # a warm corpus scores as cheaply as with weights computed at build time
        self._weights: dict[str, FloatArray] = {}
        self._stats = (self.n_docs, self.total_len)

    @classmethod
    def from_postings(
        cls,
        terms: Sequence[str],
        bounds: npt.NDArray[np.int64],
        docs: npt.NDArray[np.integer[Any]],
        tf: npt.NDArray[np.number[Any]],
        lengths: FloatArray,
        total_len: int,
        *,
        k1: float = K1,
        b: float = B,
    ) -> BM25:
        """A BM25 restored from postings as stored (search/snapshot.py): term i's documents are
        `docs[bounds[i]:bounds[i+1]]` (ascending) with their term frequencies (any integer and number
        dtypes: the weights are computed in float64); nothing is tokenized or counted. The same index
        `BM25(documents)` builds, document i at position and slot i."""
        self = cls.__new__(cls)
        self.k1, self.b = k1, b
        self.n_docs = len(lengths)
        self.total_len = int(total_len)
        self._postings = _StoredPostings(terms, bounds.tolist(), docs, tf)
        self._lengths = np.array(lengths, dtype=np.float32)
        self._row = np.arange(self.n_docs, dtype=np.int64)
        self._slot = list(range(self.n_docs))
        self._free = []
        self._weights = {}
        self._stats = (self.n_docs, self.total_len)
        return self

    def __len__(self) -> int:
        return self.n_docs

    @property
    def avgdl(self) -> float:
        return self.total_len / self.n_docs if self.n_docs and self.total_len > 0 else 1.0

    def idf(self, term: str) -> float:
        """The term's IDF (0.0 for a term no document has)."""
        posting = self._postings.get(term)
        if posting is None:
            return 0.0
        df = len(posting[0])
        return math.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5))

    def scores(self, query_tokens: Iterable[str]) -> FloatArray:
        """BM25 score of every document for the query (float32, shape (n_docs,)), by position.

        A term repeated in the query counts once per occurrence.
        """
        out = np.zeros(self.n_docs, dtype=np.float32)
        if self._stats != (self.n_docs, self.total_len):
            self._weights.clear()
            self._stats = (self.n_docs, self.total_len)
        for term, qtf in Counter(query_tokens).items():
            posting = self._postings.get(term)
            if posting is None:
                continue
            weight = self._weights.get(term)
            if weight is None:
                weight = self._weights[term] = self._weight(*posting)
            out[self._row[posting[0]]] += weight * np.float32(qtf)
        return out

    def _weight(self, slots: IntArray, tf: FloatArray) -> FloatArray:
        k1, b = self.k1, self.b
        idf = math.log1p((self.n_docs - len(slots) + 0.5) / (len(slots) + 0.5))
        norm = k1 * (1.0 - b + b * self._lengths[slots] / np.float32(self.avgdl))
        tf64 = tf.astype(np.float64)  # (as the weights were always computed: in float64)
        return np.asarray((idf * tf64 * (k1 + 1.0) / (tf64 + norm)).astype(np.float32))

    # --- one document at a time ------------------------------------------------------------------

    def insert(self, position: int, tokens: Sequence[str]) -> None:
        """A new document at `position` (the documents from there on move up by one)."""
        if self._free:
            slot = self._free.pop()
            self._lengths[slot] = len(tokens)
        else:
            slot = len(self._lengths)
            self._lengths = np.append(self._lengths, np.float32(len(tokens)))
            self._row = np.append(self._row, np.int64(-1))
        self._row[self._row >= position] += 1
        self._row[slot] = position
        self._slot.insert(position, slot)
        self._add_terms(slot, tokens)
        self.n_docs += 1
        self.total_len += len(tokens)

    def remove(self, position: int, tokens: Sequence[str]) -> None:
        """Take out the document at `position` (built from `tokens`); the ones after it move down."""
        slot = self._slot.pop(position)
        self._drop_terms(slot, tokens)
        self._row[slot] = -1
        self._row[self._row > position] -= 1
        self._free.append(slot)
        self.n_docs -= 1
        self.total_len -= len(tokens)

    def replace(self, position: int, old: Sequence[str], new: Sequence[str]) -> None:
        """The document at `position` is now built from `new` (it was from `old`)."""
        slot = self._slot[position]
        self._drop_terms(slot, old)
        self._add_terms(slot, new)
        self._lengths[slot] = len(new)
        self.total_len += len(new) - len(old)

    def _add_terms(self, slot: int, tokens: Sequence[str]) -> None:
        for term, count in Counter(tokens).items():
            self._weights.pop(term, None)
            posting = self._postings.get(term)
            if posting is None:
                self._postings[term] = (np.array([slot], np.int64), np.array([count], np.float32))
            else:
                self._postings[term] = (np.append(posting[0], slot), np.append(posting[1], np.float32(count)))

    def _drop_terms(self, slot: int, tokens: Sequence[str]) -> None:
        for term in set(tokens):
            self._weights.pop(term, None)
            slots, tf = self._postings[term]
            keep = slots != slot
            if keep.any():
                self._postings[term] = (slots[keep], tf[keep])
            else:
                del self._postings[term]


class _StoredPostings(MutableMapping[str, Posting]):
    """Postings as a snapshot stores them (one array of documents and one of frequencies, cut by
    term), a term's pair sliced out when it is asked for: restoring BM25 makes one dict of the
    vocabulary, not a pair of arrays per term. A term changed since is kept apart (None: gone)."""

    __slots__ = ("_bounds", "_changed", "_docs", "_term", "_tf")

    def __init__(
        self,
        terms: Sequence[str],
        bounds: list[int],
        docs: npt.NDArray[np.integer[Any]],
        tf: npt.NDArray[np.number[Any]],
    ) -> None:
        self._term = dict(zip(terms, range(len(terms)), strict=True))
        self._bounds = bounds
        self._docs = docs
        self._tf = tf
        self._changed: dict[str, Posting | None] = {}

    def get(self, term: str, default: Posting | None = None) -> Posting | None:  # type: ignore[override]
        if term in self._changed:
            found = self._changed[term]
            return default if found is None else found
        tid = self._term.get(term)
        if tid is None:
            return default
        lo, hi = self._bounds[tid], self._bounds[tid + 1]
        # (views of the stored arrays: a posting is replaced, never changed in place)
        return self._docs[lo:hi], self._tf[lo:hi]  # type: ignore[return-value]

    def __getitem__(self, term: str) -> Posting:
        found = self.get(term)
        if found is None:
            raise KeyError(term)
        return found

    def __setitem__(self, term: str, posting: Posting) -> None:
        self._changed[term] = posting

    def __delitem__(self, term: str) -> None:
        if self.get(term) is None:
            raise KeyError(term)
        self._changed[term] = None

    def __iter__(self) -> Iterator[str]:
        for term in self._term:
            if self._changed.get(term, True) is not None:
                yield term
        yield from (t for t, p in self._changed.items() if p is not None and t not in self._term)

    def __len__(self) -> int:
        return sum(1 for _ in self)
