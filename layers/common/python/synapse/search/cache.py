"""The container's corpora: a per-container LRU of minds' corpora bounded by the rows it holds
(`CACHE`, emptied by `state.reset`), and `load`, which serves a mind's corpus from it, checked
against the mind's version (epoch, seq), which every write moves: with nothing changed a load reads
one small item; after writes it reads the change log past its seq and those memories only, and
updates the corpus row by row (`corpus.apply`).

A container that does not hold the mind (or holds it too far behind) loads the mind's snapshot
(search/snapshot.py, one S3 object: the corpus at a change-log position) and the change log's tail
since that position, the same way; only without a usable snapshot does it read every memory. A copy
more than SNAPSHOT_CATCH_UP_MAX changed memories behind is replaced by the snapshot when that is
nearer. A reader that found the snapshot missing, unreadable or far behind, or a copy from before
the mind's latest multiple of SNAPSHOT_EVERY writes, asks for a new one (SnapshotDue, sent while it
loads); `write_snapshot` is what the writer then does (functions/snapshot_writer), never a request.
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
# When a reader asks for a new snapshot (SnapshotDue), and when it reads the snapshot instead of
# catching up: chosen with the fleet simulation (docs/fleet.md: 4.5 % of today's read units per chat
# turn at 10k active users × 1k memories, against 6.8 % with the first rule alone):
SNAPSHOT_TAIL_MAX = 8  # a snapshot loaded more than this many changed memories behind the mind
SNAPSHOT_EVERY = 4  # a copy or snapshot from before the mind's latest multiple of this many writes
SNAPSHOT_CATCH_UP_MAX = 4  # a copy further behind looks at the snapshot (a HEAD): used if nearer
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
    memories only (`corpus.apply`), or from the mind's snapshot when that is nearer; without a copy
    (or one the log cannot bring up to date: another epoch, too far behind), from the mind's snapshot
    and the log's tail since it; read whole when there is no usable snapshot either."""
    if not settings().recall_cache:
        return corpus.build(nuggets.read_columns(space), "", model_key)
    return _load(space, model_key, changelog.read(space), ask=True)


class _Due:
    """A load's SnapshotDue: sent at most once, while the load goes on, waited for at its end (so
    nothing of a request runs after its answer); never sent by the writer's own loads."""

    def __init__(self, space: Space, model_key: str | None, at: changelog.Version, ask: bool) -> None:
        self.space, self.model_key, self.at, self.ask = space, model_key, at, ask
        self.sent: Future[None] | None = None

    def __call__(self, why: str) -> None:
        if self.ask and self.sent is None:
            logger.info("snapshot due", extra={"why": why, "seq": self.at.seq})
            sp, at = self.space, self.at
            self.sent = _pool().submit(
                events.publish_snapshot_due, sp.user_id, sp.mind_id, at.epoch, at.seq, self.model_key
            )

    def settle(self) -> None:
        if self.sent is None:
            return
        try:
            self.sent.result(timeout=DUE_WAIT_S)
        except (UpstreamUnavailable, FutureTimeout) as exc:  # the next reader asks again
            logger.warning("SnapshotDue not sent", extra={"error": type(exc).__name__})


def _crossed(since: int, now: int) -> bool:
    """The mind passed a multiple of SNAPSHOT_EVERY writes between two positions."""
    return since // SNAPSHOT_EVERY < now // SNAPSHOT_EVERY


def _load(space: Space, model_key: str | None, at: changelog.Version, *, ask: bool) -> Corpus:
    mine = owner(space)
    kept = CACHE.stale(mine, model_key)
    due = _Due(space, model_key, at, ask)
    try:
        if kept is not None and kept.at is not None:
            if kept.at == at:
                vectors.with_prefix(kept.vectors)
                return kept
            log = changelog.changes(space, kept.at, at)
            ids = changelog.ids_of(log) if log is not None else None
            if log is not None and ids is not None and len(ids) <= catch_up_limit(len(kept)):
                if snapshots.enabled() and _crossed(kept.at.seq, at.seq):
                    due("every")
                nearer = None
                if len(ids) > SNAPSHOT_CATCH_UP_MAX:
                    nearer = _nearer(space, model_key, at, log, kept.at.seq, len(ids), due)
                if nearer is not None:
                    CACHE.put(mine, nearer)
                    return nearer
                corpus.apply(kept, nuggets.read_columns_of(space, ids), ids, at)
                CACHE.put(mine, kept)
                vectors.with_prefix(kept.vectors)
                return kept
        fresh = _from_snapshot(space, model_key, at, due)
        if fresh is None:
            # the version is read before the memories: a write landing in between is in the corpus
            # already, and read again (harmlessly) at the next catch-up
            fresh = corpus.build(nuggets.read_columns(space), at.token, model_key, kept)
            fresh.at = at
            logger.info("corpus read whole", extra={"rows": len(fresh)})
        CACHE.put(mine, fresh)
        return fresh
    finally:
        due.settle()


Log = list[tuple[int, tuple[str, ...]]]


def _nearer(
    space: Space, model_key: str | None, at: changelog.Version, log: Log, since: int, behind: int, due: _Due
) -> Corpus | None:
    """A copy more than SNAPSHOT_CATCH_UP_MAX changed memories behind: the snapshot and its tail
    instead, if the snapshot is nearer the mind's position (a HEAD says where it is); else None."""
    if not snapshots.enabled():
        return None
    try:
        there = snapshots.head(space, at.epoch)
    except UpstreamUnavailable:
        return None
    if there is None or there.seq <= since or (model_key is not None and there.model_key != model_key):
        return None
    if len(changelog.ids_of(log, past=there.seq)) >= behind:
        return None
    return _from_snapshot(space, model_key, at, due, log, since)


def _from_snapshot(
    space: Space,
    model_key: str | None,
    at: changelog.Version,
    due: _Due,
    log: Log | None = None,
    since: int = 0,
) -> Corpus | None:
    """The mind's corpus from its snapshot and the change log's tail since it, or None (then read
    the mind whole). `log`: the writes past `since`, if the caller has them. Asks for a new snapshot
    when there is none, it cannot be used, or it is SNAPSHOT_TAIL_MAX changed memories or a multiple
    of SNAPSHOT_EVERY writes behind."""
    if not snapshots.enabled() or at.seq == 0:  # (seq 0: never written, or a first-release version)
        return None
    try:
        found = snapshots.get(space, at.epoch)
    except UpstreamUnavailable:
        logger.warning("snapshot store unavailable: reading the mind whole")
        return None
    if found is None:
        due("missing")
        return None
    data = found[1]
    try:
        head = snapshot.header(data)
        if head.at.epoch != at.epoch:
            raise snapshot.BadSnapshot("another epoch")
        ids: list[str] | None
        if head.at.seq >= at.seq:  # (written after this reader read the version: newer still)
            ids, at = [], head.at
        elif log is not None and head.at.seq >= since:
            ids = changelog.ids_of(log, past=head.at.seq)
        else:
            ids = changelog.changed_ids(space, head.at, at)
        if ids is None or len(ids) > catch_up_limit(head.rows):
            due("behind")
            return None
        if len(ids) > SNAPSHOT_TAIL_MAX or _crossed(head.at.seq, at.seq):
            due("behind")
        got = snapshot.unpack(data, model_key)
    except snapshot.BadSnapshot as exc:
        logger.warning("snapshot refused", extra={"reason": str(exc)})
        due("refused")
        return None
    del data, found
    corpus.apply(got, nuggets.read_columns_of(space, ids) if ids else nuggets.Columns(), ids, at)
    logger.info("corpus from snapshot", extra={"rows": len(got), "at": head.at.seq, "tail": len(ids)})
    return got


@per_container
def _pool() -> ThreadPoolExecutor:
    # SnapshotDue goes out while the load goes on (one thread: a load sends at most one)
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="snapshot-due")


def write_snapshot(
    space: Space, model_key: str | None, epoch: str | None = None, seq: int | None = None
) -> str:
    """Pack the mind as it is now into its snapshot (the SnapshotDue consumer). `model_key`: the
    vectors the reader that asked wanted (None: an ingest, which reads none: the vectors of the
    snapshot there is, if any, are kept); `epoch`, `seq`: where that reader found the mind (a
    snapshot there or further is current: nothing read). The mind is read as any reader reads it
    (this container's corpus caught up, else the snapshot and its tail), never asking for a snapshot.

    Returns what happened: "written"; "current" (the snapshot is at the mind's position already);
    "empty" (nothing written in the mind yet); "lost" (other writers kept replacing it meanwhile);
    "gone" (the mind was deleted meanwhile, and the snapshot just written with it)."""

    def current(there: snapshots.Stored | None, position: int, model: str | None) -> bool:
        return there is not None and there.seq >= position and (model is None or there.model_key == model)

    there = snapshots.head(space, epoch) if epoch is not None and seq is not None else None
    if seq is not None and current(there, seq, model_key):
        return "current"
    at = changelog.read(space)
    if at.seq == 0:
        return "empty"
    if there is None or epoch != at.epoch:
        there = snapshots.head(space, at.epoch)
    model = model_key if model_key is not None else (there.model_key if there is not None else None)
    if current(there, at.seq, model):
        return "current"
    mind = _load(space, model, at, ask=False)
    assert mind.at is not None
    body = snapshot.pack(mind)
    for _ in range(3):
        if snapshots.put(space, mind.at.epoch, mind.at.seq, model, body, there):
            break
        # another writer came first: keep theirs if it is as far along (and of the same model)
        there = snapshots.head(space, mind.at.epoch)
        if current(there, mind.at.seq, model):
            return "current"
    else:
        return "lost"  # (three writers in a row came first: one of them has it)
    # a snapshot never outlives its mind: if the mind was deleted (or deleted and made again) since it
    # was read, the deletion may have listed the snapshots before this one was written
    if changelog.read(space).epoch != mind.at.epoch:
        snapshots.delete(space, mind.at.epoch)
        return "gone"
    return "written"
