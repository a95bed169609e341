"""The container's corpora: a per-container LRU of minds' corpora bounded by the rows it holds
(`CACHE`, emptied by `state.reset`), and `load`, which serves a mind's corpus from it, checked
against the mind's version (epoch, seq), which every write moves: with nothing changed a load reads
one small item; after writes it reads the change log past its seq and those memories only, and
updates the corpus row by row (`corpus.apply`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from synapse.core.config import settings
from synapse.core.state import on_reset
from synapse.search import corpus, vectors
from synapse.search.corpus import Corpus
from synapse.store import changelog, nuggets
from synapse.store.keys import Space

__all__ = ["CACHE", "CorpusCache", "catch_up_limit", "load", "owner"]

CACHE_MAX_ROWS = 200_000  # memories kept across all cached minds of a container
CATCH_UP_MIN = 64  # changed memories a catch-up reads one by one at least (else a full read)


class CorpusCache:
    """Per-container LRU of minds' corpora, bounded by the number of memories held."""

    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self._data: OrderedDict[tuple[str, str | None], Corpus] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, owner: str, model_key: str | None, version: str) -> Corpus | None:
        with self._lock:
            found = self._data.get((owner, model_key))
            if found is None or found.version != version:
                return None
            self._data.move_to_end((owner, model_key))
            return found

    def stale(self, owner: str, model_key: str | None) -> Corpus | None:
        """The mind's cached corpus whatever its version (to lend a rebuild what did not change)."""
        with self._lock:
            return self._data.get((owner, model_key))

    def put(self, owner: str, kept: Corpus) -> None:
        with self._lock:
            self._data[(owner, kept.model_key)] = kept
            self._data.move_to_end((owner, kept.model_key))
            while len(self._data) > 1 and sum(len(c) for c in self._data.values()) > self.max_rows:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


CACHE = CorpusCache(CACHE_MAX_ROWS)
on_reset(CACHE.clear)


def catch_up_limit(rows: int) -> int:
    """Past this many changed memories a full read is about as cheap as reading them one by one."""
    return max(CATCH_UP_MIN, rows // 4)


def owner(space: Space) -> str:
    """The cache's name for a mind."""
    return space.user_id if space.is_default else f"{space.user_id}\x1f{space.mind_id}"


def load(space: Space, model_key: str | None) -> Corpus:
    """The mind's corpus (with the vectors of `model_key`), kept in the container: as it is when the
    mind's version has not moved; else brought up to date from the change log with the changed
    memories only (`corpus.apply`); read whole when there is none yet, or the log cannot tell what
    changed (another epoch, too far)."""
    if not settings().recall_cache:
        return corpus.build(nuggets.read_columns(space), "", model_key)
    mine = owner(space)
    at = changelog.read(space)
    kept = CACHE.stale(mine, model_key)
    if kept is not None and kept.at is not None:
        if kept.at == at:
            vectors.with_prefix(kept.vectors)
            return kept
        ids = changelog.changed_ids(space, kept.at, at)
        if ids is not None and len(ids) <= catch_up_limit(len(kept)):
            corpus.apply(kept, nuggets.read_columns_of(space, ids), ids, at)
            CACHE.put(mine, kept)
            vectors.with_prefix(kept.vectors)
            return kept
    # the version is read before the memories: a write landing in between is in the corpus already,
    # and read again (harmlessly) at the next catch-up
    fresh = corpus.build(nuggets.read_columns(space), at.token, model_key, kept)
    fresh.at = at
    CACHE.put(mine, fresh)
    return fresh
