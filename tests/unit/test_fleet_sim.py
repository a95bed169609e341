"""The fleet simulation (`bench/fleet.py`): Lambda's containers, their corpus caches, the workload and
the cost of each path a request takes. Fast, no AWS; one test drives the local run's real pool."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

from bench import fleet
from bench.common import query_cost
from bench.report import checks
from synapse.search.cache import CorpusCache
from synapse.store.changelog import RECENT, RECENT_MAX_IDS


def _fleet(policy: str = "mru", idle_s: float = 600.0, seed: int = 0) -> fleet.Fleet:
    return fleet.Fleet(fleet.Lambda(idle_s=idle_s, policy=policy), random.Random(seed))


# --- containers ------------------------------------------------------------------------------


def test_a_busy_container_serves_no_one_else_a_new_one_starts() -> None:
    # Given a container busy until t=2
    f = _fleet()
    first, new = f.acquire(0.0)
    f.run(first, 2.0)
    # When another request arrives at t=1
    second, second_new = f.acquire(1.0)
    # Then it gets a new container (a cold start); both were new
    assert new and second_new
    assert second is not first
    assert f.started == 2


def test_an_idle_container_is_reused_the_most_recently_freed_first() -> None:
    # Given two containers freed at t=2 and t=3
    f = _fleet("mru")
    a, _ = f.acquire(0.0)
    f.run(a, 2.0)
    b, _ = f.acquire(1.0)
    f.run(b, 3.0)
    # When a request arrives at t=5
    c, new = f.acquire(5.0)
    # Then it takes the one freed last, warm
    assert c is b and not new
    assert f.started == 2


def test_a_container_freed_at_the_arrival_is_reused() -> None:
    f = _fleet()
    a, _ = f.acquire(0.0)
    f.run(a, 1.0)
    again, new = f.acquire(1.0)
    assert again is a and not new


def test_lru_takes_the_longest_idle_and_random_is_seeded() -> None:
    def freed(policy: str, seed: int = 0) -> tuple[fleet.Fleet, list[fleet.Container]]:
        f = _fleet(policy, seed=seed)
        cs = []
        for i in range(5):  # five containers, freed at t = 10, 11, … 14
            c, _ = f.acquire(float(i))
            f.run(c, 10.0 + i)
            cs.append(c)
        return f, cs

    f, cs = freed("lru")
    assert f.acquire(20.0)[0] is cs[0]
    picks = []
    for seed in range(20):
        f, cs = freed("random", seed)
        picks.append(cs.index(f.acquire(20.0)[0]))
    assert len(set(picks)) > 1  # not always the same one
    again = [freed("random", seed)[0].acquire(20.0)[0].id for seed in range(20)]
    assert [cs_id - 1 for cs_id in again] == picks  # the same seed picks the same container
    with pytest.raises(ValueError):
        fleet.Fleet(fleet.Lambda(policy="round-robin"))


def test_idle_containers_are_reclaimed_only_past_the_idle_time() -> None:
    # Given two containers freed at t=10 and t=20, reclaimed after 600 s idle
    f = _fleet(idle_s=600.0)
    a, _ = f.acquire(0.0)
    f.run(a, 10.0)
    b, _ = f.acquire(1.0)
    f.run(b, 20.0)
    # When a request arrives at t=610 (a: idle exactly 600 s) it still finds both
    f._free(610.0)
    assert f.alive == 2 and f.reclaimed == 0
    # At t=615, a is gone (605 s idle), b is kept (595 s) and serves
    c, new = f.acquire(615.0)
    assert c is b and not new
    assert f.reclaimed == 1
    # At t=1300 nothing is left: a cold start
    f.run(c, 616.0)
    d, new = f.acquire(1300.0)
    assert new and d not in (a, b)
    assert f.reclaimed == 2


# --- the corpus cache --------------------------------------------------------------------------


def test_the_cache_is_bounded_in_rows_evicting_the_least_recently_loaded() -> None:
    cache = fleet.CorpusCache(2_500)
    cache.put(1, 0, 1_000)
    cache.put(2, 0, 1_000)
    assert cache.stale(1) == 0  # looking does not move a mind up (load_corpus's CACHE.stale)
    cache.put(3, 0, 1_000)
    assert cache.minds() == [2, 3] and cache.rows == 2_000
    cache.put(2, 5, 1_000)  # loaded again at a new position: moves up
    cache.put(4, 0, 1_000)
    assert cache.minds() == [2, 4]
    assert cache.stale(2) == 5 and cache.stale(3) is None


def test_the_cache_keeps_one_mind_larger_than_its_bound() -> None:
    cache = fleet.CorpusCache(2_500)
    cache.put(1, 0, 1_000)
    cache.put(2, 0, 10_000)
    assert cache.minds() == [2]


def test_the_cache_model_evicts_as_the_services_corpus_cache_does() -> None:
    # Given the service's own cache and the model, the same random loads and looks
    class Rows:
        model_key = None

        def __init__(self, rows: int) -> None:
            self.rows = rows

        def __len__(self) -> int:
            return self.rows

    rng = random.Random(7)
    real = CorpusCache(5_000)
    model = fleet.CorpusCache(5_000)
    for _ in range(2_000):
        mind, rows = rng.randrange(12), rng.choice((500, 1_000, 2_000))
        if rng.random() < 0.3:  # a look (an unchanged hit), no load
            assert (real.stale(str(mind), None) is not None) == (model.stale(mind) is not None)
            continue
        real.put(str(mind), Rows(rows))  # type: ignore[arg-type]
        model.put(mind, 0, rows)
        # Then both hold the same minds in the same order
        assert [int(user) for user, _ in real._data] == model.minds()


# --- the workload ------------------------------------------------------------------------------


def test_arrivals_are_deterministic_for_a_seed_and_zipf_skewed() -> None:
    work = fleet.Workload(users=500, turns_per_user=20, seed=3)
    a, b = fleet.arrivals(work), fleet.arrivals(work)
    assert np.array_equal(a.t, b.t) and np.array_equal(a.user, b.user)
    assert np.array_equal(a.written, b.written)
    other = fleet.arrivals(replace(work, seed=4))
    assert not np.array_equal(a.t, other.t)
    # every turn is there, in time order, within the day and its sessions' spill-over
    assert len(a.t) == 500 * 20 == a.counts.sum()
    assert np.all(np.diff(a.t) >= 0) and a.t[0] >= 0 and a.t[-1] < 2 * fleet.DAY_S
    # a steeper Zipf gives the busiest users a larger share
    top = [
        np.sort(fleet.zipf_counts(replace(work, zipf_s=s), np.random.default_rng(1)))[-5:].sum()
        for s in (0.8, 1.1)
    ]
    assert top[1] > top[0]
    # ingests that skip the corpus write nothing
    assert not np.any(a.written[~a.loads])


def test_the_daily_curve_peaks_at_lunch_and_in_the_evening() -> None:
    hours = np.arange(0.0, 24.0, 0.25)
    rate = fleet.daily_rate(hours)
    assert hours[np.argmax(rate)] == 20.5
    assert rate[hours == 12.5][0] > rate[hours == 16.0][0]  # a lunch peak
    assert hours[np.argmin(rate)] in (4.0, 4.25, 4.5, 4.75, 5.0)  # the night's trough


# --- the cost of each path ---------------------------------------------------------------------


def test_a_full_read_costs_what_the_cost_bench_measures() -> None:
    m = fleet.Model()
    # docs/performance.md: 308 RCU (1.25 MB) at 1k, 3,071 RCU (12.57 MB) at 10k, version item included
    assert m.full_read(1_000).rcu == 308
    assert m.full_read(10_000).rcu == 3_071
    assert m.full_read(10_000).bytes == m.ver_bytes + 10_000 * m.item_bytes
    assert m.full_read(10_000).rcu == 1 + query_cost([m.item_bytes] * 10_000)["rcu"]


def test_warm_and_catch_up_paths_cost_the_version_and_the_changed_memories() -> None:
    m = fleet.Model()
    assert m.warm().rcu == 1 and m.warm().s3_gets == 0
    # named by the version item's recent entries: no Query of the log
    assert m.catch_up(1_000, ids=3, entries=2, known=True).rcu == 1 + 3
    # further behind: one Query page of the log too
    behind = m.catch_up(1_000, ids=10, entries=6, known=False)
    assert behind.rcu == 1 + 1 + 10
    assert behind.io_ms > m.catch_up(1_000, ids=10, entries=6, known=True).io_ms
    # 250 changed memories: three BatchGetItems
    assert m.tail(10_000, 250, 200, False).io_ms == m.query_ms + 3 * m.batch_get_ms


def test_a_snapshot_load_is_one_get_and_the_tail() -> None:
    m = fleet.Model()
    cold = m.snapshot_load(10_000, ids=0, entries=0, known=True)
    assert (cold.rcu, cold.s3_gets) == (1, 1)
    assert (
        cold.s3_bytes
        == m.snapshot_bytes(10_000)
        == round(m.snapshot_header_bytes + 10_000 * m.snapshot_bytes_per_memory)
    )
    with_tail = m.snapshot_load(10_000, ids=7, entries=5, known=False)
    assert with_tail.rcu == 1 + 1 + 7 and with_tail.s3_gets == 1
    assert with_tail.rcu < m.full_read(10_000).rcu / 100


def test_minds_know_their_position_and_what_changed() -> None:
    # user 0 writes at t=10 (2 ids), 20 (6 ids), 30 (1 id); user 1 at t=15 (1 id)
    minds = fleet.Minds(2, np.array([10.0, 20.0, 30.0, 15.0]), np.array([0, 0, 0, 1]), np.array([2, 6, 1, 1]))
    seq = minds.seq_at(np.array([0, 0, 0, 1, 1]), np.array([5.0, 10.0, 25.0, 14.0, 100.0]))
    assert seq.tolist() == [0, 1, 2, 0, 1]
    assert minds.changed(0, 0, 1) == (2, 1, True)
    assert minds.changed(0, 0, 3) == (9, 3, False)  # 6 ids > RECENT_MAX_IDS: not in the version item
    assert minds.changed(0, 2, 3) == (1, 1, True)
    assert RECENT == 3 and RECENT_MAX_IDS == 5  # (the model reads the service's own constants)


def _day(design: str, minds: fleet.Minds, n: int = 1_000, **model: object) -> fleet.Day:
    return fleet.Day(design, n, minds, replace(fleet.Model(), **model), fleet.Lambda(), 0)  # type: ignore[arg-type]


def _recalls(day: fleet.Day, times: list[float], seqs: list[int]) -> fleet.Served:
    out = fleet.Served.empty(len(times))
    for i, (t, s) in enumerate(zip(times, seqs, strict=True)):
        day.advance(t)
        day.serve("recall", out, i, t, 0, s, True, 0)
    return out


def test_a_container_too_far_behind_reads_the_mind_whole() -> None:
    # Given one mind of 1,000 memories that 70 memories changed between two recalls (limit: 250)
    # and another, 300
    m = fleet.Model()
    for changed, path in ((70, fleet.CATCH_UP), (300, fleet.STALE)):
        minds = fleet.Minds(1, np.array([5.0]), np.array([0]), np.array([changed]))
        served = _recalls(_day("today", minds), [0.0, 10.0], [0, 1])
        assert served.path.tolist() == [fleet.COLD, path]
        assert served.new.tolist() == [True, False]
        # (one write of 70 memories is past what the version item names: the log is read too)
        expected = m.catch_up(1_000, changed, 1, False).rcu if path == fleet.CATCH_UP else 308
        assert served.rcu[1] == expected + m.recall_fixed_gets


def test_with_snapshots_a_container_without_the_mind_reads_the_snapshot_and_its_tail() -> None:
    # Given a mind whose snapshot is at position 0 (the day's start), then a write of 3 memories
    m = fleet.Model()
    minds = fleet.Minds(1, np.array([5.0]), np.array([0]), np.array([3]))
    day = _day("snapshot", minds)
    # When a container without it recalls after the write
    served = _recalls(day, [10.0], [1])
    # Then it read the version, the snapshot (one GET) and the three memories: no full read, and it
    # asked for no snapshot (3 ≤ 8 memories, no multiple of 4 writes passed)
    assert served.path.tolist() == [fleet.SNAPSHOT]
    assert served.rcu[0] == m.snapshot_load(1_000, 3, 1, True).rcu + m.recall_fixed_gets == 1 + 3 + 2
    assert served.s3_gets[0] == 1 and day.heap == []


def test_a_reader_asks_and_the_writer_packs_the_mind_for_the_next_reader() -> None:
    # Given a mind with no snapshot, written 4 times (a multiple of SNAPSHOT_EVERY)
    m = fleet.Model()
    minds = fleet.Minds(1, np.array([1.0, 2.0, 3.0, 4.0]), np.zeros(4, np.int64), np.array([1, 1, 1, 1]))
    day = _day("snapshot", minds, snapshots_at_start=0.0)
    # When a container without it recalls at 10 s (a full read, and SnapshotDue)
    served = _recalls(day, [10.0, 20.0], [4, 4])
    day.advance(1e9)
    # Then it read the mind whole (and missed the snapshot: one GET), and the writer served the event
    # half a second later: it packed the mind at its position and put it
    assert served.path.tolist() == [fleet.COLD, fleet.WARM]  # (the second: the same container, free again)
    w = day.writer
    assert (w.events, w.written, w.s3_puts) == (1, 1, 1) and day.snap == {0: 4}
    assert served.s3_gets[0] == 1
    # the writer's reads: the version (a HEAD first: no snapshot), the mind whole, the version again
    assert w.rcu == m.ver_rcu + m.full_read(1_000).rcu - m.ver_rcu + m.ver_rcu
    # And a reader at the snapshot's position asking again finds it current: a HEAD, nothing read
    day.due(0, 30.0, True, 4)
    day.advance(1e9)
    assert (w.events, w.current, w.rcu) == (2, 1, m.ver_rcu + m.full_read(1_000).rcu)


def test_a_copy_far_behind_reads_the_snapshot_when_it_is_nearer() -> None:
    # Given a container that read the mind at 0, then 6 memories written, the snapshot at 2 writes in
    minds = fleet.Minds(1, np.array([1.0, 2.0, 3.0]), np.zeros(3, np.int64), np.array([3, 2, 1]))
    day = _day("snapshot", minds)
    day.snap[0] = 2
    served = _recalls(day, [0.5, 10.0], [0, 3])
    # Then the second recall took the snapshot (a HEAD, a GET) and the one memory since it
    assert served.path.tolist() == [fleet.SNAPSHOT, fleet.SNAPSHOT]
    m = fleet.Model()
    assert served.rcu[1] == m.snapshot_load(1_000, 1, 1, True).rcu + m.recall_fixed_gets
    assert served.s3_gets[1] == 2
    # And with the rule off it catches up the 6 memories
    day = _day("snapshot", minds, snapshot_catch_up_max=None)
    day.snap[0] = 2
    assert _recalls(day, [0.5, 10.0], [0, 3]).path.tolist() == [fleet.SNAPSHOT, fleet.CATCH_UP]


# --- a day -------------------------------------------------------------------------------------


SMALL = fleet.Workload(users=300, memories=1_000, turns_per_user=10, seed=2)


def test_a_day_is_deterministic_and_the_snapshot_reads_less() -> None:
    a, b = fleet.cell(SMALL), fleet.cell(SMALL)
    assert a == b
    today, snap = a["today"], a["snapshot"]
    assert today["turns"] == snap["turns"] == 3_000
    assert 0 < today["cold_recall_share"] < 1
    assert snap["rcu_per_turn"]["mean"] < today["rcu_per_turn"]["mean"]
    assert today["s3_per_turn"]["gets"] == 0 and snap["s3_per_turn"]["gets"] > 0
    assert today["snapshot_writer"]["events_per_turn"] == 0 < snap["snapshot_writer"]["events_per_turn"]
    assert a["ratio_rcu"] == pytest.approx(
        snap["rcu_per_turn"]["mean"] / today["rcu_per_turn"]["mean"], abs=1e-4
    )
    parts = {k: v for k, v in today["dollars_per_million_turns"].items() if k != "total"}
    assert today["dollars_per_million_turns"]["total"] == pytest.approx(sum(parts.values()), abs=0.02)
    # two requests (recall, ingest) per turn through API Gateway and Lambda
    assert parts["api_gateway"] == pytest.approx(2.0) and parts["lambda_requests"] == pytest.approx(0.4)


def test_larger_minds_are_colder_and_cost_more_per_turn() -> None:
    small = fleet.simulate(SMALL, "today")
    large = fleet.simulate(replace(SMALL, memories=10_000), "today")
    assert large["cold_recall_share"] > small["cold_recall_share"]  # fewer minds fit a container
    assert large["rcu_per_turn"]["mean"] > 5 * small["rcu_per_turn"]["mean"]


def test_the_report_shows_the_target_cell_and_the_pool_check() -> None:
    got = fleet.cell(SMALL)
    trace = [{"container": 1, "new": True, "hit": False}]
    result = {
        "target_cell": "300x1000",
        "grid": {"300x1000": got},
        "local_check": {
            "requests": 1, "idle_s": 600.0, "cache": "x", "match": False, "seconds": 1.0,
            "simulated": trace, "local_pool": [{**trace[0], "new": False}],
        },
    }  # fmt: skip
    rows = checks({"fleet": result})
    target = next(r for r in rows if "RCU per chat turn" in r["figure"])
    assert "≤ 5%" in target["target"] and target["pass"] is (got["ratio_rcu"] <= 0.05)
    check = next(r for r in rows if "local run's pool" in r["figure"])
    assert check["pass"] is False and "request 0" in check["value"]


# --- the container model against the local run's pool ------------------------------------------


def test_the_simulators_containers_match_the_local_pool() -> None:
    # Given the scripted requests (overlaps, reuse, LRU eviction, reclaim past 600 s)
    expected = [
        (1, True, False), (2, True, False), (2, False, False), (2, False, False), (2, False, False),
        (1, False, False), (1, False, True), (1, False, True), (1, False, False), (1, False, True),
        (2, False, False), (1, False, False), (2, False, False), (3, True, False), (4, True, False),
    ]  # fmt: skip
    # When the simulator and the local run's real pool (worker processes) serve them
    got = fleet.local_check()
    # Then both pick the same containers, start the same ones and find the same minds in them
    as_tuples = [(r["container"], r["new"], r["hit"]) for r in got["simulated"]]
    assert as_tuples == expected
    assert got["local_pool"] == got["simulated"] and got["match"]
    # (and the check can fail: another reuse policy picks other containers)
    other = fleet.Fleet(fleet.Lambda(policy="lru"))
    picks = []
    for step in fleet.SCRIPT:
        c, _ = other.acquire(step.t)
        other.run(c, step.t + step.hold)
        picks.append(c.id)
    assert picks != [r["container"] for r in got["simulated"]]
