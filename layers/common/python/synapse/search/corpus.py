"""A mind's corpus: its memories as columns (`store.nuggets.Columns`, as read) and what search derives
from them (each memory's tokens, a BM25 index, the vectors as one int8 matrix, the numeric columns as
arrays), built from a full read (`build`) and kept up to date row by row (`apply`).

The state is plain lists and arrays, so that a corpus can be copied, packed and restored as it is.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Iterable, MutableSequence, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import numpy as np

from synapse.core.models.base import PRIORITY_RANK, Category, Source, parse_iso
from synapse.core.models.memory import Memory
from synapse.search import tokenizer, vectors
from synapse.search.bm25 import BM25
from synapse.search.vectors import Vectors
from synapse.store import changelog, nuggets
from synapse.store.keys import Space

__all__ = ["Corpus", "apply", "build", "epochs", "memories_of", "recent_keys", "view", "when_of"]

_FAR_FUTURE = float("inf")
_PRIORITIES = {rank: priority for priority, rank in PRIORITY_RANK.items()}
# the numeric columns that scoring reads whole (live filter, nudges, periods), kept as arrays beside
# the lists; `when` is derived (`when_of`), the others are the columns' own
_NUMBERS = ("priority", "updated", "expires", "when")


@dataclass
class Corpus:
    """One mind's memories, ready for scoring: row i of every part is the memory `columns.ids[i]`."""

    version: str
    model_key: str | None  # the embedder ("model/dim") whose vectors `vectors` holds
    columns: nuggets.Columns  # without the vectors' bytes (`vectors` holds them decoded)
    # tokenize(search_text(content, key, tags)) of each memory (a list; from a snapshot, rows made on use)
    tokens: MutableSequence[list[str]]
    bm25: BM25  # over `tokens`
    vectors: Vectors  # of `model_key`
    priority: np.ndarray  # int8, 0 low … 3 critical
    updated: np.ndarray  # float64 epoch seconds
    expires: np.ndarray  # float64 epoch seconds, inf when never
    when: np.ndarray  # float64 epoch seconds: valid_at, else created_at (what a period is judged on)
    at: changelog.Version | None = None  # the mind's version it was read at (None: not from the cache)

    def __len__(self) -> int:
        return len(self.columns)


def build(
    cols: nuggets.Columns, version: str, model_key: str | None, previous: Corpus | None = None
) -> Corpus:
    """A mind's memories as columns → a Corpus (a BM25 index, the vectors as one int8 matrix).

    `previous`, the mind's corpus before the latest writes, lends the tokens of every memory whose
    searchable text (content, key, tags) is unchanged: after one write, one memory is tokenized
    instead of all of them (tokenizing was half of a rebuild)."""
    tokenize, search_text = tokenizer.tokenize, tokenizer.search_text
    found = vectors.index(cols.embs, model_key)
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
        columns=replace(cols, embs=[]),
        tokens=tokens,
        bm25=BM25(tokens),
        vectors=found,
        priority=np.array(cols.priority, dtype=np.int8),
        updated=np.array(cols.updated, dtype=np.float64),
        expires=np.array(cols.expires, dtype=np.float64),
        when=when_of(cols),
    )


def when_of(cols: nuggets.Columns) -> np.ndarray:
    """Each memory's moment, epoch seconds: its `valid_at`, else its `created_at` (a period named in a
    query is judged on it). Only rows without a valid_at parse their creation time."""
    when = np.array(cols.valid, dtype=np.float64)
    missing = np.flatnonzero(np.isneginf(when))
    if len(missing):
        when[missing] = epochs([cols.created[i] for i in missing])
    return when


def epochs(stamps: Sequence[str]) -> np.ndarray:
    """Stored timestamps as epoch seconds: the stored form `YYYY-MM-DDTHH:MM:SSZ` in one numpy pass,
    anything else one by one."""
    if all(len(t) == 20 and t[-1] == "Z" for t in stamps):
        return np.array([t[:19] for t in stamps], dtype="datetime64[s]").astype(np.float64)
    return np.array([parse_iso(t).timestamp() for t in stamps], dtype=np.float64)


def view(current: Corpus, rows: Sequence[int], changed: nuggets.Columns, at: Sequence[int]) -> Corpus:
    """A one-off corpus (not cached) of some rows of `current`, in their order, where the row at
    position `at[k]` is row k of `changed` instead (an older version of that memory). Tokens are
    lent by `current` where the text is the same; vectors are `current`'s, except where `changed`
    brings one (`changed.embs[k]`: the stored bytes of a vector of the old text, or None to keep)."""
    cols = current.columns.take(rows)
    for k, pos in enumerate(at):
        cols.replace(pos, changed, k)
    cols.embs = [None] * len(cols)
    out = build(cols, "", current.model_key, previous=current)
    out.vectors = _view_vectors(current, rows, changed, at)
    return out


def _view_vectors(
    current: Corpus, rows: Sequence[int], changed: nuggets.Columns, at: Sequence[int]
) -> Vectors:
    """The vectors of a `view`: each position's row's vector in `current`, or the one `changed` brings."""
    position = np.full(len(current), -1, dtype=np.intp)
    position[np.asarray(rows, dtype=np.intp)] = np.arange(len(rows), dtype=np.intp)
    old = current.vectors
    new = vectors.index(changed.embs, current.model_key)
    if not len(old) and not len(new):
        return new
    mine = position[old.rows] if len(old) else np.zeros(0, np.intp)
    replaced = np.asarray(at, dtype=np.intp)[new.rows] if len(new) else np.zeros(0, np.intp)
    keep = (mine >= 0) & ~np.isin(mine, replaced)
    order = np.argsort(np.concatenate([mine[keep], replaced]), kind="stable")
    dim = old.matrix.shape[1] if old.matrix.ndim == 2 and len(old) else new.matrix.shape[1] if len(new) else 0
    matrix = np.concatenate([old.matrix[keep].reshape(-1, dim), new.matrix.reshape(-1, dim)])
    return Vectors(
        rows=np.concatenate([mine[keep], replaced])[order],
        matrix=matrix[order],
        scales=np.concatenate([old.scales[keep], new.scales]).astype(np.float32)[order],
    )


def _texts(corpus: Corpus) -> Iterable[tuple[str, str, str, list[str], list[str]]]:
    """(id, content, key, tags, tokens) of every memory of a corpus."""
    c = corpus.columns
    return zip(c.ids, c.contents, c.keys, c.tags, corpus.tokens, strict=True)


def apply(corpus: Corpus, changed: nuggets.Columns, ids: Sequence[str], at: changelog.Version) -> None:
    """Bring a corpus up to date with memories `ids` as `changed` holds them now (an id missing from
    it was deleted): O(k) row inserts, replacements and removals, BM25 statistics and matrix rows
    included. Rows stay in id order, as a fresh read has them, so the corpus is the one a full
    build would make (tests/integration/test_incremental_corpus.py)."""
    tokenize, search_text = tokenizer.tokenize, tokenizer.search_text
    now = {mem_id: j for j, mem_id in enumerate(changed.ids)}
    found = vectors.index(changed.embs, corpus.model_key)
    vector_of = {int(r): k for k, r in enumerate(found.rows)}
    numbers = {name: getattr(changed, name) for name in _NUMBERS if name != "when"}
    numbers["when"] = when_of(changed)
    cols = corpus.columns
    for mem_id in dict.fromkeys(ids):
        pos = bisect_left(cols.ids, mem_id)
        here = pos < len(cols.ids) and cols.ids[pos] == mem_id
        j = now.get(mem_id)
        if j is None:
            if here:
                _remove(corpus, pos)
            continue
        tokens = tokenize(search_text(changed.contents[j], changed.keys[j], changed.tags[j]))
        k = vector_of.get(j)
        vec = (found.matrix[k], found.scales[k]) if k is not None else None
        if here:
            corpus.bm25.replace(pos, corpus.tokens[pos], tokens)
            corpus.tokens[pos] = tokens
            cols.replace(pos, changed, j)
            for name in _NUMBERS:
                getattr(corpus, name)[pos] = numbers[name][j]
            corpus.vectors.replace(pos, vec)
        else:
            corpus.bm25.insert(pos, tokens)
            corpus.tokens.insert(pos, tokens)
            cols.insert(pos, changed, j)
            for name in _NUMBERS:
                setattr(corpus, name, np.insert(getattr(corpus, name), pos, numbers[name][j]))
            corpus.vectors.insert(pos, vec)
    corpus.vectors.prefix = None  # (rebuilt from the matrix by `vectors.with_prefix` where it pays)
    corpus.version, corpus.at = at.token, at


def _remove(corpus: Corpus, pos: int) -> None:
    corpus.bm25.remove(pos, corpus.tokens[pos])
    del corpus.tokens[pos]
    corpus.columns.remove(pos)
    for name in _NUMBERS:
        setattr(corpus, name, np.delete(getattr(corpus, name), pos))
    corpus.vectors.remove(pos)


# --- what the services read of a corpus ----------------------------------------------------------


def memories_of(corpus: Corpus, categories: Iterable[str], space: Space) -> list[Memory]:
    """The corpus's memories of some categories as memory objects, for what needs only their text,
    priority and times (the identity line): source and confidence are not kept in a corpus (the
    objects say agent and 1.0)."""
    wanted = set(categories)
    c = corpus.columns
    return [
        Memory(
            id=c.ids[i],
            category=Category(c.categories[i]),
            key=c.keys[i],
            content=c.contents[i],
            tags=c.tags[i],
            priority=_PRIORITIES[int(c.priority[i])],
            source=Source.agent,
            verified=bool(c.verified[i]),
            confidence=1.0,
            expires_at=None if c.expires[i] == _FAR_FUTURE else _utc(float(c.expires[i])),
            user_id=space.user_id,
            created_at=parse_iso(c.created[i]),
            updated_at=_utc(float(c.updated[i])),
            mind_id=space.mind_id,
        )
        for i in range(len(corpus))
        if c.categories[i] in wanted
    ]


def recent_keys(corpus: Corpus, first: Collection[str], limit: int) -> list[tuple[str, str, str]]:
    """(category, key, content) of at most `limit` memories: those of the categories `first` before the
    others, each part most recently updated first (ties by key)."""
    c = corpus.columns
    ranked = sorted(
        range(len(corpus)),
        key=lambda i: (c.categories[i] not in first, -float(c.updated[i]), c.keys[i]),
    )
    return [(c.categories[i], c.keys[i], c.contents[i]) for i in ranked[:limit]]


def _utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)
