"""9. The fleet: what a chat turn costs when Lambda, not the user, picks the container.

A discrete-event simulation of one day (no AWS): users with Zipf-skewed activity send chat turns in
sessions over a daily curve; each turn is a recall (`memory_recall`), then, after the agent's answer,
an ingest (`memory_ingest`), each function with containers of its own, started and reused as Lambda
does (one request at a time, an idle container reused if there is one, else a cold start; idle
containers reclaimed after `idle_s`). Each container keeps minds' corpora in an LRU bounded in rows
(search.cache.CACHE_MAX_ROWS), so a request lands on one of these paths: the mind unchanged (the version
GetItem), a catch-up after writes (the change log + BatchGetItem of the changed memories), or a
container without a usable copy (today: a full read of the partition; with snapshots, as search/cache.py
does it: one S3 GET of the mind's snapshot + the change-log tail since its position, or a full read
when there is none or it is too far behind). With snapshots, a reader that found the snapshot missing
or more than `snapshot_tail_max` memories behind sends SnapshotDue, and the snapshot writer (a third
function, containers of its own) packs the mind and puts it: its reads, requests and time are counted
too. Every cost is a parameter (`Model`, `Prices`) taken from the project's own measurements (the
snapshot's sizes and CPU from `make bench`'s snapshot section) and DynamoDB's rules; docs/fleet.md says
where each comes from and how to read the output.

The container model is checked against the local run's warm pool (`local.functions.Pool`, driven in
process with a scripted sequence: `local_check`).
"""

from __future__ import annotations

import heapq
import math
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from bisect import bisect_right
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache, partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from bench.common import LAYER, RCU_BYTES, ROOT, item_size, query_cost
from synapse.search.cache import (
    CACHE_MAX_ROWS,
    SNAPSHOT_CATCH_UP_MAX,
    SNAPSHOT_EVERY,
    SNAPSHOT_TAIL_MAX,
    catch_up_limit,
)
from synapse.store.changelog import RECENT, RECENT_MAX_IDS
from synapse.store.keys import change_sk

DAY_S = 86_400.0
DAY_STARTS_AT_H = 4.0  # the simulated day runs 04:00 → 04:00: it starts at the trough, empty fleet
BATCH_GET_MAX = 100  # keys a BatchGetItem takes

# the paths a request takes to its mind's corpus (cold and stale: read whole; snapshot: from the
# mind's snapshot and its tail, with or without a copy of the mind too far behind)
WARM, CATCH_UP, COLD, STALE, NONE, SNAPSHOT = range(6)
PATHS = ("warm", "catch_up", "cold", "stale", "none", "snapshot")
FROM_ELSEWHERE = (COLD, STALE, SNAPSHOT)  # a container without a usable copy of the mind


# --- prices ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prices:
    """On-demand list prices, us-east-1, as read on `read_on` (sources in docs/fleet.md). Dollars a unit."""

    region: str = "us-east-1"
    read_on: str = "2026-12-04"
    ddb_read_unit: float = 0.125e-6  # read request unit (Standard table class; since 2024-11-01)
    ddb_write_unit: float = 0.625e-6  # write request unit
    s3_get: float = 0.0004e-3  # S3 Standard GET ($0.0004 per 1,000)
    s3_put: float = 0.005e-3  # S3 Standard PUT ($0.005 per 1,000)
    s3_gb_month: float = 0.023  # S3 Standard storage, first 50 TB
    lambda_gb_second: float = 0.0000166667  # x86_64, first 6 billion GB-s a month
    lambda_request: float = 0.20e-6
    api_request: float = 1.00e-6  # API Gateway HTTP API, first 300 million a month
    event: float = 1.00e-6  # EventBridge, a custom event published (SnapshotDue)


# --- the cost of each path ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Read:
    """What one request's corpus path costs: DynamoDB read units and item bytes, S3, time."""

    rcu: int = 0
    bytes: int = 0  # item bytes DynamoDB reads (and charges), whatever the projection
    s3_gets: int = 0
    s3_bytes: int = 0
    io_ms: float = 0.0  # waiting on DynamoDB / S3
    cpu_ms: float = 0.0  # parsing, building or updating the corpus


@dataclass(frozen=True)
class Model:
    """Sizes, times and the two designs' parameters. Measured figures say where from
    (docs/performance.md, README Performance, `make bench`); the rest are assumptions to replace with
    measurements on Lambda (docs/fleet.md lists which is which)."""

    # DynamoDB sizes (bench/cost.py's item model: 1,256 B a nugget with its int8 vector; the version
    # item with its three recent entries, at its largest, 675 B) → 308 / 3,071 RCU cold at 1k / 10k
    item_bytes: int = 1256
    ver_bytes: int = 675
    # reads a request makes besides its corpus (bench/chatturn.py's trace of a warm turn): recall the
    # provider key and the identity; ingest the request's marker, the session and the provider key;
    # an ingest that writes also reads the memories it writes (one BatchGetItem, a unit a key, found
    # or not) and the version again
    recall_fixed_gets: int = 2
    ingest_fixed_gets: int = 3
    # writes of a turn (estimates from the items' sizes: transactions cost 2 units per KB): the
    # messages, session, marker and idempotency record; each memory written (~1.3 KB); each write's
    # version update + change-log entry
    ingest_fixed_wru: int = 10
    wru_per_memory: int = 4
    wru_per_write: int = 4
    # Lambda (template.yaml: 1024 MB, x86_64); CPU-bound times measured here on a full core are
    # scaled by 1769/1024 (Lambda gives one vCPU at 1,769 MB, proportionally less below)
    memory_mb: int = 1024
    cpu_scale: float = 1769 / 1024
    sandbox_ms: float = 150.0  # a new execution environment before the init (assumption; not billed)
    init_ms: tuple[tuple[str, float], ...] = (("recall", 570.0), ("ingest", 672.0))  # coldstart "alone"
    # DynamoDB latencies, same region (assumptions)
    get_ms: float = 5.0
    batch_get_ms: float = 8.0
    query_ms: float = 8.0  # a small Query (the change log)
    page_ms: float = 30.0  # a 1 MB Query page on the wire
    # CPU (measured here): the service's parser 15.4 ms per page of 839 items; build_corpus 44.5 ms at
    # 1k / 428 ms at 10k; corpus.apply of one changed memory 0.61 ms at 1k / 2.8 ms at 10k; warm
    # scoring 0.21 ms at 1k / 1.56 ms at 10k
    parse_ms_per_item: float = 15.4 / 839
    build_ms_per_memory: float = 0.043
    apply_ms_base: float = 0.37
    apply_ms_per_memory: float = 0.00024
    score_ms_per_memory: float = 0.00016
    handler_ms: float = 5.0  # routing, validation, the answer
    # models (assumptions): the query's embedding (overlaps recall's reads), the extraction, the
    # memories' embeddings
    embed_ms: float = 150.0
    llm_ms: float = 1200.0
    embed_docs_ms: float = 150.0
    append_ms: float = 15.0  # ingest's first transaction (the messages)
    write_ms: float = 15.0  # ingest's nugget transaction
    # the snapshot design as built (search/snapshot.py, search/cache.py). Measured by `make bench`'s
    # snapshot section (these defaults are its run of 2026-12-04 at 100k memories; `run` takes the
    # figures of its own run when that section ran first): the object's size, unpacking it, packing it
    # (the writer's, from a corpus loaded from the snapshot: its tokens made first)
    snapshot_bytes_per_memory: float = 1374.1
    snapshot_header_bytes: int = 3000
    snapshot_unpack_ms_per_memory: float = 0.00129
    snapshot_pack_ms_per_memory: float = 0.0119
    # the rules (search/cache.py): a reader that loads the snapshot more than this many changed
    # memories behind, or finds none, sends SnapshotDue; the writer packs the mind as it is then
    snapshot_tail_max: int = SNAPSHOT_TAIL_MAX
    # a reader whose copy (or the snapshot it loads) is from before the mind's latest multiple of
    # `snapshot_every` writes asks too: busy minds' snapshots stay near their position (None: off)
    snapshot_every: int | None = SNAPSHOT_EVERY
    # a container that holds the mind but is more than this many changed memories behind looks at
    # the snapshot (a HEAD) and loads it instead of catching up when its tail is shorter (None: off)
    snapshot_catch_up_max: int | None = SNAPSHOT_CATCH_UP_MAX
    # (not built; a sensitivity run) SnapshotDue from the write itself, after every so many writes
    snapshot_every_write: int | None = None
    # the writer (template.yaml: SnapshotWriterFunction, 1,769 MB: one full vCPU) and its trigger
    # (assumptions): EventBridge to an asynchronous Lambda invocation; its init is recall's
    due_delay_s: float = 0.5
    # minds with a snapshot when the day starts, at their position then (steady state: yesterday's
    # readers asked for them, and the lifecycle rule keeps one 30 days; 0: the service's first day)
    snapshots_at_start: float = 1.0
    writer_memory_mb: int = 1769
    writer_init_ms: float = 570.0
    s3_first_byte_ms: float = 30.0  # (assumption) a GET's, a HEAD's or a PUT's first byte
    s3_mb_per_s: float = 90.0  # (assumption) one stream, same region

    def init(self, function: str) -> float:
        return dict(self.init_ms)[function]

    @property
    def ver_rcu(self) -> int:
        return math.ceil(self.ver_bytes / RCU_BYTES)

    @property
    def item_rcu(self) -> int:  # a BatchGetItem charges each item on its own, at least one unit
        return max(1, math.ceil(self.item_bytes / RCU_BYTES))

    def apply_ms(self, n: int) -> float:
        return (self.apply_ms_base + self.apply_ms_per_memory * n) * self.cpu_scale

    def score_ms(self, n: int) -> float:
        return self.score_ms_per_memory * n * self.cpu_scale

    def warm(self) -> Read:
        """Nothing changed: the version GetItem."""
        return Read(rcu=self.ver_rcu, bytes=self.ver_bytes, io_ms=self.get_ms)

    def tail(self, n: int, ids: int, entries: int, known: bool) -> Read:
        """The changes past a position: the change log's entries unless the version item carries them
        (`known`: at most RECENT entries of at most RECENT_MAX_IDS ids), then the changed memories."""
        rcu, read, io = 0, 0, 0.0
        if entries and not known:
            size = entries * _chg_entry_bytes(max(1, round(ids / entries)))
            rcu += max(1, math.ceil(size / RCU_BYTES))
            read += size
            io += self.query_ms
        if ids:
            rcu += ids * self.item_rcu
            read += ids * self.item_bytes
            io += math.ceil(ids / BATCH_GET_MAX) * self.batch_get_ms
        return Read(rcu=rcu, bytes=read, io_ms=io, cpu_ms=ids * self.apply_ms(n))

    def catch_up(self, n: int, ids: int, entries: int, known: bool) -> Read:
        return _plus(self.warm(), self.tail(n, ids, entries, known))

    def full_read(self, n: int) -> Read:
        """Today's cold load: the version, then every memory (Query pages of ≤ 1 MB), built."""
        q = _query(n, self.item_bytes)
        cpu = (n * self.parse_ms_per_item + n * self.build_ms_per_memory) * self.cpu_scale
        return Read(
            rcu=self.ver_rcu + q["rcu"],
            bytes=self.ver_bytes + q["bytes"],
            io_ms=self.get_ms + q["pages"] * self.page_ms,
            cpu_ms=cpu,
        )

    def snapshot_bytes(self, n: int) -> int:
        return round(self.snapshot_header_bytes + n * self.snapshot_bytes_per_memory)

    def s3_ms(self, size: int) -> float:
        return self.s3_first_byte_ms + size / (self.s3_mb_per_s * 1e6) * 1000

    def snapshot_get(self, n: int, cpu_scale: float | None = None) -> Read:
        """One S3 GET of the mind's snapshot, unpacked."""
        size = self.snapshot_bytes(n)
        scale = self.cpu_scale if cpu_scale is None else cpu_scale
        return Read(
            s3_gets=1,
            s3_bytes=size,
            io_ms=self.s3_ms(size),
            cpu_ms=n * self.snapshot_unpack_ms_per_memory * scale,
        )

    def snapshot_load(self, n: int, ids: int, entries: int, known: bool) -> Read:
        """A load from the snapshot: the version, one S3 GET of the packed corpus, the tail."""
        return _plus(_plus(self.warm(), self.snapshot_get(n)), self.tail(n, ids, entries, known))

    def missed(self) -> Read:
        """A GET that found no snapshot (a request, and its wait)."""
        return Read(s3_gets=1, io_ms=self.s3_first_byte_ms)

    def pack_and_put_ms(self, n: int) -> float:
        """The writer packs the mind (a full vCPU) and PUTs it."""
        return n * self.snapshot_pack_ms_per_memory + self.s3_ms(self.snapshot_bytes(n))


def _plus(a: Read, b: Read) -> Read:
    return Read(*(x + y for x, y in zip(asdict(a).values(), asdict(b).values(), strict=True)))


@lru_cache(maxsize=64)
def _query(n: int, item_bytes: int) -> dict[str, Any]:
    return query_cost([item_bytes] * n)


@lru_cache(maxsize=64)
def _chg_entry_bytes(ids: int) -> int:
    """A change-log entry's size (store/changelog.py: key, the ids it changed, ttl)."""
    entry = {
        "pk": {"S": "mem:" + "u" * 36},
        "sk": {"S": change_sk(123456)},
        "ids": {"L": [{"S": "0" * 36}] * ids},
        "ttl": {"N": "1790000000"},
    }
    return item_size(entry)


# --- the workload ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """One day of chat turns. Activity is Zipf over users (user i's share ∝ (i+1)^-zipf_s); each
    user's turns come in sessions (geometric length, mean `session_turns`) whose starts follow
    `daily_rate`, a session's turns `turn_gap_s` apart (median, lognormal)."""

    users: int = 10_000
    memories: int = 1_000
    turns_per_user: float = 30.0
    zipf_s: float = 0.9
    session_turns: float = 6.0
    turn_gap_s: float = 45.0
    gap_sigma: float = 0.6
    reply_s: float = 5.0  # the recall's arrival → the ingest's: the agent answers in between
    commit_s: float = 1.5  # the ingest's arrival → its write committed (the extraction runs first)
    loads: float = 0.9  # ingests with a substantive user message (the others skip the model and corpus)
    # memories written by an ingest that loads: P(0), P(1), … (mean 1.1)
    written: tuple[float, ...] = (0.35, 0.35, 0.2, 0.07, 0.03)
    seed: int = 1


def daily_rate(hour: np.ndarray) -> np.ndarray:
    """Relative rate of session starts by hour of the day (users in one time zone): a lunch peak at
    12:30, the day's peak at 20:30, a floor of 0.1 through the night (trough ~04:00)."""

    def bump(centre: float, width: float) -> np.ndarray:
        d = np.abs((hour - centre + 12.0) % 24.0 - 12.0)  # circular distance in hours
        return np.exp(-0.5 * (d / width) ** 2)

    return 0.1 + 0.6 * bump(12.5, 1.5) + 1.0 * bump(20.5, 1.75) + 0.25 * bump(9.0, 1.0)


@dataclass
class Turns:
    """A day's chat turns, in order of their recall's arrival (seconds from the day's start)."""

    user: np.ndarray
    t: np.ndarray  # the recall's arrival; the ingest arrives `reply_s` later
    loads: np.ndarray  # the ingest loads the corpus
    written: np.ndarray  # memories the ingest writes (0: no write)
    counts: np.ndarray  # turns per user


def zipf_counts(w: Workload, rng: np.random.Generator) -> np.ndarray:
    weights = np.arange(1, w.users + 1, dtype=np.float64) ** -w.zipf_s
    return rng.multinomial(round(w.users * w.turns_per_user), weights / weights.sum())


def arrivals(w: Workload) -> Turns:
    """The day's turns, deterministic for a seed."""
    rng = np.random.default_rng(w.seed)
    counts = zipf_counts(w, rng)
    total = int(counts.sum())
    user = np.repeat(np.arange(w.users, dtype=np.int64), counts)
    first = np.zeros(total, dtype=bool)
    first[np.cumsum(counts)[counts > 0] - counts[counts > 0]] = True
    starts = first | (rng.random(total) < 1.0 / w.session_turns)
    session = np.cumsum(starts) - 1
    # session starts from the daily curve (minute grid, uniform within the minute)
    minutes = np.arange(24 * 60)
    hour = (DAY_STARTS_AT_H + minutes / 60.0) % 24.0
    cdf = np.cumsum(daily_rate(hour))
    cdf /= cdf[-1]
    picks = np.searchsorted(cdf, rng.random(int(starts.sum())))
    begin = (picks + rng.random(picks.size)) * 60.0
    gaps = rng.lognormal(math.log(w.turn_gap_s), w.gap_sigma, total)
    gaps[starts] = 0.0
    run = np.cumsum(gaps)
    offset = run - run[np.flatnonzero(starts)][session]
    t = begin[session] + offset
    loads = rng.random(total) < w.loads
    p = np.asarray(w.written, dtype=np.float64)
    written = np.where(loads, rng.choice(p.size, size=total, p=p / p.sum()), 0)
    order = np.argsort(t, kind="stable")
    return Turns(user[order], t[order], loads[order], written[order].astype(np.int64), counts)


# --- Lambda's containers -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Lambda:
    """How Lambda runs one function's containers. AWS does not say which idle container gets a
    request: `mru` (the most recently used, as the local run's pool does), `lru` or `random`."""

    idle_s: float = 600.0  # an idle container is reclaimed after this (observed: 10 min since 2019)
    policy: str = "mru"
    cache_rows: int = CACHE_MAX_ROWS


class CorpusCache:
    """A container's corpora, as search.cache.CorpusCache keeps them: LRU by rows, at least one kept. What
    is kept per mind is the change-log position it was read at."""

    __slots__ = ("_data", "max_rows", "rows")

    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self._data: OrderedDict[int, tuple[int, int]] = OrderedDict()  # mind → (seq, rows)
        self.rows = 0

    def stale(self, mind: int) -> int | None:
        """The position of the mind's corpus held, whatever it is (load_corpus's `CACHE.stale`: it
        does not move the mind up the LRU; only `put` does)."""
        got = self._data.get(mind)
        return None if got is None else got[0]

    def put(self, mind: int, seq: int, rows: int) -> None:
        old = self._data.pop(mind, None)
        if old is not None:
            self.rows -= old[1]
        self._data[mind] = (seq, rows)
        self.rows += rows
        while len(self._data) > 1 and self.rows > self.max_rows:
            _, (_, gone) = self._data.popitem(last=False)
            self.rows -= gone

    def minds(self) -> list[int]:
        return list(self._data)


class Container:
    __slots__ = ("born", "cache", "id", "last_used", "served")

    def __init__(self, cid: int, born: float, cache_rows: int) -> None:
        self.id, self.born, self.last_used, self.served = cid, born, born, 0
        self.cache = CorpusCache(cache_rows)


class Fleet:
    """One function's containers: a request takes an idle container (by `policy`), or starts a new
    one; a container serves one request at a time and is idle from its end; an idle container
    unused for longer than `idle_s` is gone (`Pool.reap`'s rule: last used before now - idle_s)."""

    def __init__(self, spec: Lambda, rng: random.Random | None = None) -> None:
        if spec.policy not in ("mru", "lru", "random"):
            raise ValueError(f"policy {spec.policy!r}: one of mru, lru, random")
        self.spec = spec
        self.rng = rng or random.Random(0)
        self._idle: deque[Container] = deque()  # by the time each came free, oldest first
        self._busy: list[tuple[float, int, Container]] = []
        self._ids = 0
        self.started = 0
        self.reclaimed = 0
        self.peak = 0

    def _free(self, now: float) -> None:
        busy, idle = self._busy, self._idle
        while busy and busy[0][0] <= now:
            end, _, c = heapq.heappop(busy)
            c.last_used = end
            idle.append(c)
        cutoff = now - self.spec.idle_s
        while idle and idle[0].last_used < cutoff:
            idle.popleft()
            self.reclaimed += 1

    def acquire(self, now: float) -> tuple[Container, bool]:
        """The container that serves a request arriving now, and whether it is new (a cold start)."""
        self._free(now)
        idle = self._idle
        if idle:
            if self.spec.policy == "mru":
                return idle.pop(), False
            if self.spec.policy == "lru":
                return idle.popleft(), False
            j = self.rng.randrange(len(idle))
            c = idle[j]
            del idle[j]
            return c, False
        self._ids += 1
        self.started += 1
        return Container(self._ids, now, self.spec.cache_rows), True

    def run(self, c: Container, until: float) -> None:
        c.served += 1
        heapq.heappush(self._busy, (until, c.id, c))
        self.peak = max(self.peak, len(self._busy))

    @property
    def alive(self) -> int:
        return len(self._idle) + len(self._busy)


# --- the minds' change logs --------------------------------------------------------------------------


class Minds:
    """Each mind's writes in commit order: its position (seq) at a time, the memories changed
    between two positions, and whether the version item's `recent` entries name them all."""

    def __init__(self, users: int, when: np.ndarray, who: np.ndarray, ids: np.ndarray) -> None:
        order = np.lexsort((when, who))
        self.when = when[order]
        self.who = who[order]
        self.ids: list[list[int]] = [[] for _ in range(users)]
        self.times: list[list[float]] = [[] for _ in range(users)]
        for u, k, t in zip(self.who.tolist(), ids[order].tolist(), self.when.tolist(), strict=True):
            self.ids[u].append(k)
            self.times[u].append(t)
        self.cum: list[list[int]] = []
        for per in self.ids:
            run = [0]
            for k in per:
                run.append(run[-1] + k)
            self.cum.append(run)

    def seq_at(self, users: np.ndarray, times: np.ndarray) -> np.ndarray:
        """Writes of each user committed at or before each time (vectorised)."""
        lo = np.searchsorted(self.who, users, side="left")
        key = users.astype(np.float64) * (2 * DAY_S + 10.0) + times
        keys = self.who.astype(np.float64) * (2 * DAY_S + 10.0) + self.when
        return np.asarray(np.searchsorted(keys, key, side="right") - lo, dtype=np.int64)

    def seq_of(self, mind: int, t: float) -> int:
        """One mind's writes committed at or before t."""
        return bisect_right(self.times[mind], t)

    def changed(self, mind: int, since: int, now: int) -> tuple[int, int, bool]:
        """(memories, entries, known from the version item) between two positions."""
        entries = now - since
        ids = self.cum[mind][now] - self.cum[mind][since]
        known = entries <= RECENT and max(self.ids[mind][since:now], default=0) <= RECENT_MAX_IDS
        return ids, entries, known


# --- a day of both functions, and the snapshot writer ----------------------------------------------


@dataclass
class Served:
    """Per request of one function, in the turns' order."""

    path: np.ndarray
    rcu: np.ndarray
    bytes: np.ndarray
    s3_gets: np.ndarray
    s3_bytes: np.ndarray
    latency_ms: np.ndarray
    billed_ms: np.ndarray
    new: np.ndarray

    @classmethod
    def empty(cls, total: int) -> Served:
        z = partial(np.zeros, total)
        return cls(
            z(np.int8),
            z(np.int64),
            z(np.int64),
            z(np.int64),
            z(np.int64),
            z(np.float64),
            z(np.float64),
            z(bool),
        )


@dataclass
class Writer:
    """The snapshot writer's day: SnapshotDue events it served, what it read, wrote and took."""

    events: int = 0
    written: int = 0  # snapshots put
    current: int = 0  # found the snapshot at the mind's position already (a HEAD, nothing written)
    rcu: int = 0
    bytes: int = 0
    s3_gets: int = 0  # GETs and HEADs
    s3_puts: int = 0
    s3_bytes: int = 0  # read and written
    billed_ms: float = 0.0
    new: int = 0
    paths: dict[str, int] = field(default_factory=dict)


class Day:
    """Recalls and ingests in time order, each function with containers of its own (`Fleet`), and,
    with snapshots, the minds' snapshots (their positions) and the writer's containers, served as
    SnapshotDue events come due (the readers' and, with `snapshot_every`, the writes')."""

    def __init__(self, design: str, n: int, minds: Minds, model: Model, spec: Lambda, seed: int) -> None:
        if design not in ("today", "snapshot"):
            raise ValueError(f"design {design!r}: today or snapshot")
        self.snapshots = design == "snapshot"
        self.n, self.minds, self.model = n, minds, model
        self.fleets = {
            name: Fleet(spec, random.Random(seed + i))
            for i, name in enumerate(("recall", "ingest", "writer"))
        }
        self.limit = catch_up_limit(n)
        # mind → the position of its snapshot (the day's first minds in order: seeded, deterministic)
        start = round(model.snapshots_at_start * len(minds.ids))
        self.snap: dict[int, int] = dict.fromkeys(range(start), 0) if design == "snapshot" else {}
        self.heap: list[tuple[float, int, int, int]] = []  # (time, order, kind, mind): 0 due, 1 landed
        self.landing: dict[int, int] = {}  # order of a landing → the position it lands
        self.asked: dict[int, int] = {}  # order of a SnapshotDue → the position its reader saw
        self.order = 0
        self.writer = Writer()
        self.reads: dict[tuple[Any, ...], Read] = {}
        self.full = model.full_read(n)

    # --- the corpus --------------------------------------------------------------------------------

    def _cached(self, key: tuple[Any, ...], make: Callable[[], Read]) -> Read:
        read = self.reads.get(key)
        if read is None:
            read = self.reads[key] = make()
        return read

    def corpus(self, c: Container, u: int, s: int, t: float, ask: bool) -> tuple[int, Read]:
        """What loading mind u at position s costs on container c (search.cache.load's decisions);
        a reader that asks sends SnapshotDue when it finds the snapshot missing or far behind."""
        m, n = self.model, self.n
        held = c.cache.stale(u)
        if held == s:
            return WARM, m.warm()
        every = m.snapshot_every if self.snapshots else None
        if held is not None:
            ids, entries, known = self.minds.changed(u, held, s)
            if ids <= self.limit:
                if every and held // every < s // every:
                    self.due(u, t, ask, s)
                far = m.snapshot_catch_up_max if self.snapshots else None
                catch_up = self._cached(
                    ("c", ids, entries, known), lambda: m.catch_up(n, ids, entries, known)
                )
                c.cache.put(u, s, n)
                if far is None or ids <= far:
                    return CATCH_UP, catch_up
                # a HEAD tells where the snapshot is: loaded if its tail is shorter than this copy's
                head = Read(s3_gets=1, io_ms=m.s3_first_byte_ms)
                at = self.snap.get(u, -1)
                tail = self.minds.changed(u, at, s) if at > held else None
                if tail is None or tail[0] >= ids:
                    return CATCH_UP, _plus(head, catch_up)
                if tail[0] > m.snapshot_tail_max:
                    self.due(u, t, ask, s)
                return SNAPSHOT, _plus(head, m.snapshot_load(n, *tail))
        path = COLD if held is None else STALE
        c.cache.put(u, s, n)
        if not self.snapshots:
            return path, self.full
        at = self.snap.get(u, -1)
        if at < 0:
            self.due(u, t, ask, s)
            return path, _plus(self.full, m.missed())
        ids, entries, known = self.minds.changed(u, at, s)
        if ids > self.limit:
            self.due(u, t, ask, s)
            return path, _plus(self.full, m.snapshot_get(n))  # (fetched, then found too far behind)
        if ids > m.snapshot_tail_max or (every and at // every < s // every):
            self.due(u, t, ask, s)
        return SNAPSHOT, self._cached(
            ("s", ids, entries, known), lambda: m.snapshot_load(n, ids, entries, known)
        )

    def due(self, u: int, t: float, ask: bool = True, seq: int = 0) -> None:
        """SnapshotDue for mind u from a reader at position `seq`, served after the bus's delay."""
        if ask:
            self.push(t + self.model.due_delay_s, 0, u)
            self.asked[self.order] = seq

    def push(self, t: float, kind: int, u: int) -> None:
        self.order += 1
        heapq.heappush(self.heap, (t, self.order, kind, u))

    # --- the writer ----------------------------------------------------------------------------------

    def advance(self, until: float) -> None:
        """Serve the SnapshotDue events and land the snapshots written, up to `until`."""
        while self.heap and self.heap[0][0] <= until:
            t, order, kind, u = heapq.heappop(self.heap)
            if kind == 1:  # a snapshot put: readers from now on find it
                self.snap[u] = max(self.snap.get(u, -1), self.landing.pop(order))
                continue
            self.write(u, t, self.asked.pop(order))

    def write(self, u: int, t: float, asked: int) -> None:
        """cache.write_snapshot: the version, a HEAD; unless the snapshot is at the mind's position,
        the mind loaded as any reader loads it (never asking), packed, PUT, the version read again."""
        m, w = self.model, self.writer
        fleet = self.fleets["writer"]
        c, new = fleet.acquire(t)
        s = self.minds.seq_of(u, t)
        w.events += 1
        w.new += new
        # a HEAD first: a snapshot at (or past) the position the reader saw is current, nothing read
        ms = m.handler_ms + m.s3_first_byte_ms
        rcu, gets = 0, 1
        if self.snap.get(u, -1) >= asked:
            w.current += 1
        else:
            ms += m.get_ms
            rcu += m.ver_rcu
            path, read = self.corpus(c, u, s, t, ask=False)
            w.paths[PATHS[path]] = w.paths.get(PATHS[path], 0) + 1
            size = m.snapshot_bytes(self.n)
            cpu = read.cpu_ms * (1.0 / m.cpu_scale)  # (the writer's full vCPU)
            # (the load reuses the version read first: every path's own version read taken out)
            ms += read.io_ms - m.get_ms + cpu + m.pack_and_put_ms(self.n) + m.get_ms
            rcu += read.rcu - m.ver_rcu + m.ver_rcu
            gets += read.s3_gets
            w.bytes += read.bytes
            w.s3_bytes += read.s3_bytes + size
            w.s3_puts += 1
            w.written += 1
            self.push(t + ms / 1000.0, 1, u)
            self.landing[self.order] = s
        start = (m.sandbox_ms + m.writer_init_ms) if new else 0.0
        fleet.run(c, t + (start + ms) / 1000.0)
        w.rcu += rcu
        w.s3_gets += gets
        w.billed_ms += math.ceil((m.writer_init_ms if new else 0.0) + ms)

    # --- the functions' requests -----------------------------------------------------------------------

    def serve(
        self, fn: str, out: Served, i: int, t: float, u: int, s: int, loads: bool, written: int
    ) -> None:
        m = self.model
        recall = fn == "recall"
        c, new = self.fleets[fn].acquire(t)
        kind, read = NONE, None
        if recall or loads:
            kind, read = self.corpus(c, u, s, t, ask=True)
        fixed_gets = m.recall_fixed_gets if recall else m.ingest_fixed_gets
        ms = m.handler_ms + fixed_gets * m.get_ms
        corpus_ms = 0.0 if read is None else read.io_ms + read.cpu_ms
        extra_rcu = 0
        if recall:
            ms += max(m.embed_ms, corpus_ms) + m.score_ms(self.n)
        else:
            ms += m.append_ms + corpus_ms
            if loads:
                ms += m.llm_ms
            if written:
                # the memories it writes read first (a unit a key), the version, the transaction
                extra_rcu = written * m.item_rcu + m.ver_rcu
                ms += m.embed_docs_ms + m.batch_get_ms + m.get_ms + m.write_ms
        start = m.sandbox_ms + m.init(fn) if new else 0.0
        self.fleets[fn].run(c, t + (start + ms) / 1000.0)
        out.path[i] = kind
        out.rcu[i] = (0 if read is None else read.rcu) + fixed_gets * m.ver_rcu + extra_rcu
        if read is not None:
            out.bytes[i], out.s3_gets[i], out.s3_bytes[i] = read.bytes, read.s3_gets, read.s3_bytes
        out.latency_ms[i] = start + ms
        out.billed_ms[i] = math.ceil((m.init(fn) if new else 0.0) + ms)
        out.new[i] = new


def simulate(
    work: Workload,
    design: str = "today",
    model: Model | None = None,
    spec: Lambda | None = None,
    prices: Prices | None = None,
    turns: Turns | None = None,
) -> dict[str, Any]:
    """One day of `work` under `design` ("today" or "snapshot"): figures per chat turn."""
    model = model or Model()
    spec = spec or Lambda()
    prices = prices or Prices()
    turns = turns if turns is not None else arrivals(work)
    n = work.memories
    t_ingest = turns.t + work.reply_s
    writes = turns.written > 0
    minds = Minds(work.users, t_ingest[writes] + work.commit_s, turns.user[writes], turns.written[writes])
    # what each request finds: the writes committed before it (an ingest sees its mind before its own)
    seq_recall = minds.seq_at(turns.user, turns.t)
    seq_ingest = minds.seq_at(turns.user, t_ingest)
    day = Day(design, n, minds, model, spec, work.seed)
    if day.snapshots and model.snapshot_every_write:
        # (not built) SnapshotDue from the write that takes a mind past a multiple of these
        every = model.snapshot_every_write
        for j in np.flatnonzero(writes & ((seq_ingest + 1) % every == 0)).tolist():
            day.due(int(turns.user[j]), float(t_ingest[j] + work.commit_s), True, int(seq_ingest[j]) + 1)
    total = len(turns.t)
    rec, ing = Served.empty(total), Served.empty(total)
    users, loads, written = turns.user.tolist(), turns.loads.tolist(), turns.written.tolist()
    times = np.concatenate([turns.t, t_ingest])
    seqs = np.concatenate([seq_recall, seq_ingest]).tolist()
    for k, t in zip(
        np.argsort(times, kind="stable").tolist(),
        times[np.argsort(times, kind="stable")].tolist(),
        strict=True,
    ):
        day.advance(t)
        if k < total:
            day.serve("recall", rec, k, t, users[k], seqs[k], True, 0)
        else:
            i = k - total
            day.serve("ingest", ing, i, t, users[i], seqs[k], loads[i], written[i])
    day.advance(math.inf)
    w = day.writer
    rcu = rec.rcu + ing.rcu
    ddb_bytes = rec.bytes + ing.bytes
    s3_gets = rec.s3_gets + ing.s3_gets
    wru = model.ingest_fixed_wru + np.where(
        writes, turns.written * model.wru_per_memory + model.wru_per_write, 0
    )
    gb_s = (rec.billed_ms + ing.billed_ms) / 1000.0 * model.memory_mb / 1024.0
    writer_gb_s = w.billed_ms / 1000.0 * model.writer_memory_mb / 1024.0
    dollars = {
        "dynamodb_reads": (float(rcu.sum()) + w.rcu) * prices.ddb_read_unit,
        "dynamodb_writes": float(wru.sum()) * prices.ddb_write_unit,
        "s3_requests": (float(s3_gets.sum()) + w.s3_gets) * prices.s3_get + w.s3_puts * prices.s3_put,
        "lambda_compute": (float(gb_s.sum()) + writer_gb_s) * prices.lambda_gb_second,
        "lambda_requests": (2 * total + w.events) * prices.lambda_request,
        "api_gateway": 2 * total * prices.api_request,
        "events": w.events * prices.event,
    }
    per_million = 1e6 / total
    cold = np.isin(rec.path, FROM_ELSEWHERE)
    ingest_loads = ing.path != NONE
    storage_gb = work.users * model.snapshot_bytes(n) / 1e9 if day.snapshots else 0.0
    return {
        "design": design,
        "users": work.users,
        "memories": n,
        "turns": total,
        # the mean counts the writer's reads too (spread over the day's turns); the percentiles are of
        # the turns' own (a recall and its ingest)
        "rcu_per_turn": {
            "mean": _r((rcu.sum() + w.rcu) / total),
            "p50": _p(rcu, 50),
            "p95": _p(rcu, 95),
            "p99": _p(rcu, 99),
        },
        "recall_rcu_mean": _r(rec.rcu.mean()),
        "ingest_rcu_mean": _r(ing.rcu.mean()),
        "writer_rcu_per_turn": _r(w.rcu / total, 3),
        "dynamodb_bytes_per_turn": {
            "mean": _r((ddb_bytes.sum() + w.bytes) / total, 0),
            "p95": _p(ddb_bytes, 95),
        },
        "s3_per_turn": {
            "gets": _r((s3_gets.sum() + w.s3_gets) / total, 4),
            "puts": _r(w.s3_puts / total, 4),
            "bytes": _r(((rec.s3_bytes + ing.s3_bytes).sum() + w.s3_bytes) / total, 0),
        },
        "snapshot_writer": {
            "events_per_turn": _r(w.events / total, 4),
            "written_per_turn": _r(w.written / total, 4),
            "current_share": _r(w.current / w.events, 3) if w.events else None,
            "paths": w.paths,
            "containers_started": w.new,
            "billed_s_per_turn": _r(w.billed_ms / 1000.0 / total, 4),
        },
        "wru_per_turn": _r(wru.mean()),
        "recall_paths": _shares(rec.path, np.ones(total, bool)),
        "ingest_paths": _shares(ing.path, ingest_loads),
        "cold_recall_share": _r(cold.mean(), 4),
        "cold_ingest_share": _r(np.isin(ing.path, FROM_ELSEWHERE)[ingest_loads].mean(), 4),
        "full_read_share": {
            "recall": _r(np.isin(rec.path, (COLD, STALE)).mean(), 4),
            "ingest": _r(np.isin(ing.path, (COLD, STALE))[ingest_loads].mean(), 4),
        },
        "new_container_share": {"recall": _r(rec.new.mean(), 5), "ingest": _r(ing.new.mean(), 5)},
        "recall_latency_ms": {"p50": _p(rec.latency_ms, 50), "p95": _p(rec.latency_ms, 95)},
        "recall_latency_cold_ms": {
            "p50": _p(rec.latency_ms[cold], 50) if cold.any() else None,
            "p95": _p(rec.latency_ms[cold], 95) if cold.any() else None,
        },
        "ingest_latency_ms": {"p50": _p(ing.latency_ms, 50), "p95": _p(ing.latency_ms, 95)},
        "containers": {
            "recall_started": day.fleets["recall"].started,
            "ingest_started": day.fleets["ingest"].started,
            "recall_peak": day.fleets["recall"].peak,
            "ingest_peak": day.fleets["ingest"].peak,
            "writer_started": day.fleets["writer"].started,
            "writer_peak": day.fleets["writer"].peak,
        },
        "dollars_per_million_turns": {k: _r(v * per_million, 3) for k, v in dollars.items()}
        | {"total": _r(sum(dollars.values()) * per_million, 2)},
        "snapshot_storage_gb": _r(storage_gb, 2),
        "snapshot_storage_dollars_month": _r(storage_gb * prices.s3_gb_month, 2),
        "top_user_turns": int(turns.counts.max()),
        "top_1pct_users_turn_share": _r(
            float(np.sort(turns.counts)[::-1][: max(1, work.users // 100)].sum()) / float(turns.counts.sum()),
            3,
        ),
    }


def _r(x: Any, digits: int = 2) -> float:
    return round(float(x), digits)


def _p(x: np.ndarray, q: float) -> float:
    return round(float(np.percentile(x, q, method="inverted_cdf")), 1)


def _shares(path: np.ndarray, mask: np.ndarray) -> dict[str, float]:
    chosen = path[mask]
    if not chosen.size:
        return {}
    return {name: _r((chosen == code).mean(), 4) for code, name in enumerate(PATHS) if code != NONE}


def cell(work: Workload, model: Model | None = None, spec: Lambda | None = None) -> dict[str, Any]:
    """Both designs on the same day's turns, and the ratio of their read units."""
    turns = arrivals(work)
    today = simulate(work, "today", model, spec, turns=turns)
    snap = simulate(work, "snapshot", model, spec, turns=turns)
    return {
        "today": today,
        "snapshot": snap,
        "ratio_rcu": _r(snap["rcu_per_turn"]["mean"] / today["rcu_per_turn"]["mean"], 4),
        "ratio_dollars": _r(
            snap["dollars_per_million_turns"]["total"] / today["dollars_per_million_turns"]["total"], 4
        ),
    }


# --- the check against the local run's pool ----------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One request of the scripted check: at `t` (s), for `user`, held `hold` s; `changed`: the mind
    moved since any container read it (the container updates its copy and moves it up its LRU)."""

    t: float
    user: int
    hold: float
    changed: bool = False


# 4 users of 1,000 rows each, containers holding 2,500 rows (two minds): a second container while the
# first is busy, the most recently freed container reused, LRU eviction by load (an unchanged hit does
# not move a mind up), an idle container kept at 599 s and reclaimed past 600 s
SCRIPT = (
    Step(0.0, 0, 2.0),  # c1, new
    Step(1.0, 1, 2.0),  # c1 busy: c2, new
    Step(5.0, 2, 1.0),  # c1 and c2 idle: c2, freed last; holds 1, 2
    Step(10.0, 0, 1.0, changed=True),  # c2: 0 in, 1 out
    Step(11.0, 1, 5.0),  # c2 (freed at 11): 1 in, 2 out
    Step(12.0, 2, 0.5),  # c2 busy: c1 (holds 0): 2 in
    Step(13.0, 0, 0.5, changed=True),  # c1, a hit after a write: 0 moves up (2 is now the oldest)
    Step(13.6, 2, 0.3),  # c1, an unchanged hit: 2 stays the oldest
    Step(14.0, 3, 3.0),  # c1: 3 in, 2 out (used at 13.6, loaded before 0)
    Step(20.0, 0, 596.0),  # c2 freed at 16, c1 at 17: c1, a hit (0 was kept)
    Step(615.0, 2, 5.0),  # c1 busy; c2 idle for 599 s, kept: c2
    Step(616.5, 2, 1.0),  # c1 (freed at 616): a miss (2 left it at 14)
    Step(1217.6, 3, 1.0),  # c1 idle for 600.1 s, reclaimed; c2 for 597.6 s: c2
    Step(1218.0, 1, 1.0),  # c2 busy, c1 gone: c3, new
    Step(2000.0, 0, 1.0),  # every container idle past 600 s: c4, new
)


def _trace(labels: Sequence[Any], new: Sequence[bool], hit: Sequence[bool]) -> list[dict[str, Any]]:
    """Containers named 1, 2, … in order of first use, so that two traces compare."""
    names: dict[Any, int] = {}
    out = []
    for label, is_new, is_hit in zip(labels, new, hit, strict=True):
        names.setdefault(label, len(names) + 1)
        out.append({"container": names[label], "new": bool(is_new), "hit": bool(is_hit)})
    return out


def simulated_trace(script: Sequence[Step], idle_s: float, max_rows: int, rows: int) -> list[dict[str, Any]]:
    fleet = Fleet(Lambda(idle_s=idle_s, policy="mru", cache_rows=max_rows))
    labels, new, hit = [], [], []
    for step in script:
        c, is_new = fleet.acquire(step.t)
        held = c.cache.stale(step.user) is not None
        if not held or step.changed:
            c.cache.put(step.user, 0, rows)
        fleet.run(c, step.t + step.hold)
        labels.append(c.id)
        new.append(is_new)
        hit.append(held)
    return _trace(labels, new, hit)


# the probe each local worker runs: the real corpus cache (search.cache.CorpusCache) with a small bound,
# then it waits until the check lets it finish (so that the check, not the machine, decides overlaps)
PROBE = '''
import os
import time
from pathlib import Path

from synapse.search.cache import CorpusCache


class Rows:
    """What the corpus cache looks at: a length and a model key."""

    model_key = None

    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return self.rows


cache = None


def handler(event, context):
    global cache
    if cache is None:
        cache = CorpusCache(event["max_rows"])
    hit = cache.stale(event["user"], None) is not None
    if not hit or event["changed"]:
        cache.put(event["user"], Rows(event["rows"]))
    Path(event["started"]).write_text("started")
    deadline = time.monotonic() + 120
    while not Path(event["release"]).exists() and time.monotonic() < deadline:
        time.sleep(0.002)
    return {"pid": os.getpid(), "hit": hit}
'''


class _Clock:
    """The pool's clock during the check: the script's time, set by the check."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _wait_for(path: Path, thread: threading.Thread, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the local worker did not start the request ({path.name})")
        time.sleep(0.002)


def local_trace(script: Sequence[Step], idle_s: float, max_rows: int, rows: int) -> list[dict[str, Any]]:
    """The same script through the local run's pool (`local.functions.Pool`, real worker processes),
    its clock set to the script's time: arrivals and ends in time order, `Pool.reap(idle_s)` at each
    arrival (the reaper thread does it every idle_s / 4 in the local server)."""
    from local import functions as local_functions
    from local.template import Function

    clock = _Clock()
    module = vars(local_functions)  # the pool reads `time.monotonic` there: the check's clock instead
    real_time = module["time"]
    with tempfile.TemporaryDirectory(prefix="fleet-check-") as tmp:
        code = Path(tmp) / "probe"
        code.mkdir()
        (code / "app.py").write_text(PROBE)
        fn = Function(
            logical_id="FleetProbe",
            file=code / "app.py",
            attr="handler",
            code_dir=code,
            environment={},
            timeout=120,
            memory=128,
        )
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        module["time"] = SimpleNamespace(monotonic=clock, perf_counter=time.perf_counter)
        pool = local_functions.Pool(fn, env, len(script), [str(LAYER)], subprocess.DEVNULL)
        answers: dict[int, Any] = {}
        errors: list[BaseException] = []
        threads: dict[int, threading.Thread] = {}

        def invoke(i: int, event: dict[str, Any]) -> None:
            try:
                answers[i] = pool.invoke(event)
            except BaseException as exc:  # reported by the waiting side
                errors.append(exc)

        events = sorted(
            [(s.t, 1, i) for i, s in enumerate(script)] + [(s.t + s.hold, 0, i) for i, s in enumerate(script)]
        )
        try:
            for at, kind, i in events:
                clock.now = at
                step = script[i]
                started, release = Path(tmp) / f"started-{i}", Path(tmp) / f"release-{i}"
                if kind == 1:
                    pool.reap(idle_s)
                    event = {
                        "user": str(step.user),
                        "changed": step.changed,
                        "rows": rows,
                        "max_rows": max_rows,
                        "started": str(started),
                        "release": str(release),
                    }
                    threads[i] = threading.Thread(target=invoke, args=(i, event), daemon=True)
                    threads[i].start()
                    _wait_for(started, threads[i], 120.0)
                else:
                    release.write_text("go")
                    threads[i].join(120.0)
                    if errors:
                        raise RuntimeError(f"the local pool failed: {errors[0]!r}")
        finally:
            module["time"] = real_time
            pool.close(timeout=5)
    labels, new, hit = [], [], []
    for i in range(len(script)):
        answer = answers[i]
        if answer.error:
            raise RuntimeError(f"the probe failed: {answer.payload[:200]!r}")
        labels.append(answer.pid)
        new.append(answer.cold)
        hit.append(answer.value()["hit"])
    return _trace(labels, new, hit)


def local_check(
    script: Sequence[Step] = SCRIPT, idle_s: float = 600.0, max_rows: int = 2500, rows: int = 1000
) -> dict[str, Any]:
    t0 = time.perf_counter()
    sim = simulated_trace(script, idle_s, max_rows, rows)
    pool = local_trace(script, idle_s, max_rows, rows)
    return {
        "requests": len(script),
        "idle_s": idle_s,
        "cache": f"{max_rows} rows, minds of {rows}",
        "match": sim == pool,
        "simulated": sim,
        "local_pool": pool,
        "seconds": round(time.perf_counter() - t0, 1),
    }


# --- the section -------------------------------------------------------------------------------------


def grid(
    users: Sequence[int],
    memories: Sequence[int],
    base: Workload,
    log: Callable[[str], None],
    model: Model | None = None,
    spec: Lambda | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for u in users:
        for m in memories:
            t0 = time.perf_counter()
            got = cell(replace(base, users=u, memories=m), model, spec)
            log(
                f"  fleet {u} users × {m} memories: RCU/turn today {got['today']['rcu_per_turn']['mean']}, "
                f"snapshot {got['snapshot']['rcu_per_turn']['mean']} ({got['ratio_rcu'] * 100:.1f} %); "
                f"cold recalls {got['today']['cold_recall_share'] * 100:.0f} % "
                f"({time.perf_counter() - t0:.1f} s)"
            )
            out[f"{u}x{m}"] = got
    return out


def _brief(today: dict[str, Any], snap: dict[str, Any]) -> dict[str, Any]:
    return {
        "cold_recall_share": today["cold_recall_share"],
        "cold_ingest_share": today["cold_ingest_share"],
        "rcu_today": today["rcu_per_turn"]["mean"],
        "rcu_snapshot": snap["rcu_per_turn"]["mean"],
        "ratio_rcu": _r(snap["rcu_per_turn"]["mean"] / today["rcu_per_turn"]["mean"], 4),
        "s3_puts_per_turn": snap["s3_per_turn"]["puts"],
        "dollars_today": today["dollars_per_million_turns"]["total"],
        "dollars_snapshot": snap["dollars_per_million_turns"]["total"],
    }


def sensitivity(
    base: Workload, target: dict[str, Any], log: Callable[[str], None], model: Model | None = None
) -> dict[str, Any]:
    """The target cell again with one assumption changed at a time: Lambda's and the workload's
    (both designs), and the snapshot rules (the snapshot design only, against the target cell's
    today): what the built rules add, and the alternatives weighed."""
    model = model or Model()
    fleet_variants: dict[str, tuple[Workload, Lambda]] = {
        "policy random": (base, Lambda(policy="random")),
        "policy lru": (base, Lambda(policy="lru")),
        "idle 5 min": (base, Lambda(idle_s=300.0)),
        "idle 15 min": (base, Lambda(idle_s=900.0)),
        "zipf 0.8": (replace(base, zipf_s=0.8), Lambda()),
        "zipf 1.1": (replace(base, zipf_s=1.1), Lambda()),
        "sessions of 1 turn": (replace(base, session_turns=1.0), Lambda()),
    }
    out: dict[str, Any] = {}
    for name, (work, spec) in fleet_variants.items():
        t0 = time.perf_counter()
        got = cell(work, model, spec)
        out[name] = _brief(got["today"], got["snapshot"])
        log(f"  fleet sensitivity {name}: {out[name]} ({time.perf_counter() - t0:.1f} s)")
    turns = arrivals(base)
    snapshot_variants = {
        "no snapshot when the day starts (the service's first day)": replace(model, snapshots_at_start=0.0),
        "rules: only a snapshot loaded > 8 memories behind asks": replace(
            model, snapshot_every=None, snapshot_catch_up_max=None
        ),
        "rules: without the snapshot for copies far behind": replace(model, snapshot_catch_up_max=None),
        "rules: without the multiple of 4 writes": replace(model, snapshot_every=None),
        "rules: every 2 writes": replace(model, snapshot_every=2),
        "rules: every 8 writes": replace(model, snapshot_every=8),
        "rules: copies > 8 memories behind look": replace(model, snapshot_catch_up_max=8),
        "rules: snapshots loaded > 4 memories behind ask": replace(model, snapshot_tail_max=4),
        "not built: SnapshotDue from every write, first rule only": replace(
            model, snapshot_every=None, snapshot_catch_up_max=None, snapshot_every_write=1
        ),
        "not built: SnapshotDue from every write, copies > 4 behind look": replace(
            model, snapshot_every=None, snapshot_every_write=1
        ),
    }
    for name, variant in snapshot_variants.items():
        t0 = time.perf_counter()
        out[name] = _brief(target["today"], simulate(base, "snapshot", variant, turns=turns))
        log(f"  fleet sensitivity {name}: {out[name]} ({time.perf_counter() - t0:.1f} s)")
    return out


MEASURED = (
    "snapshot_bytes_per_memory",
    "snapshot_unpack_ms_per_memory",
    "snapshot_pack_ms_per_memory",
)


def run(quick: bool, log: Callable[[str], None], measured: dict[str, Any] | None = None) -> dict[str, Any]:
    """The grid (1k / 10k active users × 1k / 10k memories; --quick: 1k memories only), the
    sensitivity of the target cell (full run only) and the check against the local pool.
    `measured`: the snapshot's costs from this run's snapshot section (else the Model's defaults)."""
    base = Workload()
    model = Model()
    if measured:
        model = replace(model, **{k: measured[k] for k in MEASURED if k in measured})
    out: dict[str, Any] = {
        "workload": asdict(base),
        "lambda": asdict(Lambda()),
        "model": asdict(model),
        "model_measured_in_this_run": bool(measured),
        "prices": asdict(Prices()),
        "target_cell": "10000x1000",
    }
    out["grid"] = grid([1_000, 10_000], [1_000] if quick else [1_000, 10_000], base, log, model)
    if not quick:
        out["sensitivity"] = sensitivity(base, out["grid"][out["target_cell"]], log, model)
    out["local_check"] = local_check()
    log(f"  fleet: the local pool's containers {'match' if out['local_check']['match'] else 'DIFFER'}")
    return out


if __name__ == "__main__":  # python -m bench.fleet [users memories]: one cell, both designs
    import json

    users, memories = (int(x) for x in (sys.argv[1:3] if len(sys.argv) > 2 else (10_000, 1_000)))
    t0 = time.perf_counter()
    print(json.dumps(cell(Workload(users=users, memories=memories)), indent=1))
    print(f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)


__all__ = ["Fleet", "Lambda", "Model", "Prices", "Workload", "arrivals", "cell", "local_check", "simulate"]
