"""The container's corpora: a per-container LRU of minds' corpora bounded by the rows it holds
(`CACHE`, emptied by `state.reset`), and `load`, which serves a mind's corpus from it, checked
against the mind's version (epoch, seq), which every write moves: with nothing changed a load reads
one small item; after writes it reads the change log past its seq and those memories only, and
updates the corpus row by row (`corpus.apply`).

A container that does not hold the mind (or holds it too far behind) loads the mind's snapshot
(search/snapshot.py, one S3 object: the corpus at a change-log position) and the change log's tail
since that position, the same way; only without a usable snapshot does it read every memory. A
reader that found the snapshot missing, unreadable or `SNAPSHOT_TAIL_MAX` memories behind asks for a
new one (SnapshotDue, sent while it loads); `write_snapshot` is what the writer then does
(functions/snapshot_writer), never a request.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from synapse.aws import events
from synapse.core.config import settings
from synapse.core.errors import UpstreamUnavailable
from synapse.core.observability import logger
from synapse.core.state import on_reset, per_container
from synapse.search import corpus, snapshot, vectors
from synapse.search.corpus import Corpus
from synapse.store import changelog, nuggets, snapshots
from synapse.store.keys import Space

__all__ = ["CACHE", "CorpusCache", "catch_up_limit", "load", "owner", "write_snapshot"]

CACHE_MAX_ROWS = 200_000  # memories kept across all cached minds of a container
CATCH_UP_MIN = 64  # changed memories a catch-up reads one by one at least (else a full read)
# a reader that loads a snapshot more than this many changed memories behind the mind asks for a new
# one (the tail is still read and applied): chosen with the fleet simulation (docs/fleet.md)
SNAPSHOT_TAIL_MAX = 8
DUE_WAIT_S = 2.0  # how long a load waits, at its end, for its SnapshotDue to be sent


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
    memories only (`corpus.apply`); without one (or one the log cannot bring up to date: another
    epoch, too far behind), from the mind's snapshot and the log's tail since it; read whole when
    there is no usable snapshot either."""
    if not settings().recall_cache:
        return corpus.build(nuggets.read_columns(space), "", model_key)
    return _load(space, model_key, changelog.read(space), ask=True)


def _load(space: Space, model_key: str | None, at: changelog.Version, *, ask: bool) -> Corpus:
    mine = owner(space)
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
    fresh, due = _from_snapshot(space, model_key, at, ask)
    if fresh is None:
        # the version is read before the memories: a write landing in between is in the corpus
        # already, and read again (harmlessly) at the next catch-up
        fresh = corpus.build(nuggets.read_columns(space), at.token, model_key, kept)
        fresh.at = at
    CACHE.put(mine, fresh)
    _settle(due)
    return fresh


def _from_snapshot(
    space: Space, model_key: str | None, at: changelog.Version, ask: bool
) -> tuple[Corpus | None, Future[None] | None]:
    """The mind's corpus from its snapshot and the change log's tail since it, or None (then read
    the mind whole); and the SnapshotDue sent meanwhile, if this reader asks for a new snapshot."""
    if not snapshots.enabled() or at.seq == 0:  # (seq 0: never written, or a first-release version)
        return None, None
    due: Future[None] | None = None

    def ask_for_one(why: str) -> None:
        nonlocal due
        if ask and due is None:
            logger.info("snapshot due", extra={"why": why, "seq": at.seq})
            due = _pool().submit(
                events.publish_snapshot_due, space.user_id, space.mind_id, at.epoch, at.seq, model_key
            )

    try:
        found = snapshots.get(space, at.epoch)
    except UpstreamUnavailable:
        logger.warning("snapshot store unavailable: reading the mind whole")
        return None, None
    if found is None:
        ask_for_one("missing")
        return None, due
    data = found[1]
    try:
        head = snapshot.header(data)
        if head.at.epoch != at.epoch:
            raise snapshot.BadSnapshot("another epoch")
        if head.at.seq >= at.seq:  # (written after this reader read the version: newer still)
            ids: list[str] | None = []
            at = head.at
        else:
            ids = changelog.changed_ids(space, head.at, at)
        if ids is None or len(ids) > catch_up_limit(head.rows):
            ask_for_one("behind")
            return None, due
        if len(ids) > SNAPSHOT_TAIL_MAX:
            ask_for_one("behind")
        got = snapshot.unpack(data, model_key)
    except snapshot.BadSnapshot as exc:
        logger.warning("snapshot refused", extra={"reason": str(exc)})
        ask_for_one("refused")
        return None, due
    del data, found
    corpus.apply(got, nuggets.read_columns_of(space, ids) if ids else nuggets.Columns(), ids, at)
    return got, due


@per_container
def _pool() -> ThreadPoolExecutor:
    # SnapshotDue goes out while the load goes on; the load waits for it at its end (`_settle`), so
    # nothing of a request runs after its answer
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="snapshot-due")


def _settle(due: Future[None] | None) -> None:
    if due is None:
        return
    try:
        due.result(timeout=DUE_WAIT_S)
    except (UpstreamUnavailable, FutureTimeout) as exc:  # the next reader asks again
        logger.warning("SnapshotDue not sent", extra={"error": type(exc).__name__})


def write_snapshot(space: Space, model_key: str | None) -> str:
    """Pack the mind as it is now into its snapshot (the SnapshotDue consumer). `model_key`: the
    vectors the reader that asked wanted (None: an ingest, which reads none: the vectors of the
    snapshot there is, if any, are kept). The mind is read as any reader reads it (this container's
    corpus caught up, else the snapshot and its tail), never asking for a snapshot itself.

    Returns what happened: "written"; "current" (the snapshot is at the mind's position already);
    "empty" (nothing written in the mind yet); "lost" (other writers kept replacing it meanwhile);
    "gone" (the mind was deleted meanwhile, and the snapshot just written with it)."""
    at = changelog.read(space)
    if at.seq == 0:
        return "empty"
    there = snapshots.head(space, at.epoch)
    model = model_key if model_key is not None else (there.model_key if there is not None else None)
    if there is not None and there.seq >= at.seq and there.model_key == model:
        return "current"
    mind = _load(space, model, at, ask=False)
    assert mind.at is not None
    body = snapshot.pack(mind)
    for _ in range(3):
        if snapshots.put(space, mind.at.epoch, mind.at.seq, model, body, there):
            break
        # another writer came first: keep theirs if it is as far along (and of the same model)
        there = snapshots.head(space, mind.at.epoch)
        if there is not None and there.seq >= mind.at.seq and there.model_key == model:
            return "current"
    else:
        return "lost"  # (three writers in a row came first: one of them has it)
    # a snapshot never outlives its mind: if the mind was deleted (or deleted and made again) since it
    # was read, the deletion may have listed the snapshots before this one was written
    if changelog.read(space).epoch != mind.at.epoch:
        snapshots.delete(space, mind.at.epoch)
        return "gone"
    return "written"
