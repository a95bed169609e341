"""10. Cold recall with snapshots: a container that holds no corpus, today's path (the version, every
memory's Query pages, the corpus built) against the snapshot path (the version, one S3 GET of the
packed corpus, the change log's tail since it), at 10k and 100k memories, in one run.

Both go through the service's own code, `search.cache.load` then scoring, to a ranked top 10 (the
query's embedding aside: it is the same for both and overlaps the load in recall). The network is
not in the times: moto answers the version, the tail and the S3 GET in process, and the full read's
Query pages are answered from their bytes, made here as DynamoDB sends them (moto's own Query would
take longer than the whole client side, which is what is timed: botocore, the service's item parser,
building the corpus, or unpacking the snapshot and applying the tail). Read units come from the real
items' sizes by DynamoDB's rules. Both paths must give the same answer, scores included.

The figures the fleet simulation uses (a snapshot's bytes per memory, unpacking and packing per
memory) are measured here, and the warm recall and a chat turn are measured with snapshots on and off.
"""

from __future__ import annotations

import base64
import io
import json
import math
import statistics
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from bench.common import (
    DIM,
    MODEL,
    PAGE_LIMIT,
    RCU_BYTES,
    USER,
    item_size,
    moto_aws,
    nugget_item,
    patched,
    query_cost,
    summary,
    unit_rows,
)

MODEL_KEY = f"{MODEL}/{DIM}"
QUERY = "which editor theme does the user like on weekends"
TAIL_WRITES = ((0, 1, 2), (3, 4))  # the tail since the snapshot: two writes, five memories (a chat's)
RATIO_RCU = 0.02  # the targets: read units ≤ 2 % of a full read,
RATIO_MS = 0.25  # time to a ranked answer ≤ 25 % of today's cold path
WARM_RATIO = 1.1  # warm recall and the chat turn unchanged
CHAT_ROUNDS = 3  # the chat turn, snapshots on then off, this many times


class _Raw(io.BytesIO):
    """A response body as botocore reads it from urllib3."""

    def stream(self, **_: Any) -> Iterator[bytes]:
        chunk = self.read()
        while chunk:
            yield chunk
            chunk = self.read()


def _wire(item: dict[str, Any]) -> dict[str, Any]:
    def enc(attr: dict[str, Any]) -> Any:
        ((kind, value),) = attr.items()
        if kind == "B":
            return {"B": base64.b64encode(value).decode()}
        if kind == "L":
            return {"L": [enc(v) for v in value]}
        return attr

    return {k: enc(v) for k, v in item.items()}


def query_pages(items: list[dict[str, Any]], projected: list[dict[str, Any]]) -> list[bytes]:
    """The full read's Query answers as DynamoDB sends them: pages of at most 1 MB of (whole) items,
    each holding the projected attributes, all but the last with its LastEvaluatedKey."""
    pages, page, size = [], [], 0
    for full, shown in zip(items, projected, strict=True):
        s = item_size(full)
        if page and size + s > PAGE_LIMIT:
            pages.append(page)
            page, size = [], 0
        page.append(shown)
        size += s
    pages.append(page)
    out = []
    for i, chunk in enumerate(pages):
        body: dict[str, Any] = {
            "Count": len(chunk),
            "ScannedCount": len(chunk),
            "Items": [_wire(x) for x in chunk],
        }
        if i < len(pages) - 1:
            body["LastEvaluatedKey"] = {"pk": {"S": f"mem:{USER}"}, "sk": chunk[-1]["sk"]}
        out.append(json.dumps(body).encode())
    return out


@contextmanager
def answered(
    db_client: Any, s3_client: Any, pages: list[bytes], recorded: dict[Any, Any] | None, obj: Any
) -> Iterator[dict[str, int]]:
    """Every call of the two clients answered from bytes, before moto sees it: the full read's Query
    pages (by ExclusiveStartKey), the other DynamoDB calls as recorded (`recording`), and the
    snapshot's GetObject with the object's bytes and headers (its CRC32 too: botocore checks it, as it
    does on AWS). Counts what it answered; a call it cannot answer fails the run. `recorded` None:
    the pages only (moto answers the rest)."""
    from botocore.awsrequest import AWSResponse

    starts = {None: 0}
    for i, body in enumerate(pages[:-1]):
        starts[json.loads(body)["LastEvaluatedKey"]["sk"]["S"]] = i + 1
    served = {"pages": 0, "calls": 0}

    def dynamodb(request: Any, event_name: str, **_: Any) -> Any:
        op = event_name.rsplit(".", 1)[-1]
        served["calls"] += 1
        if op == "Query" and "nug:" in request.body.decode():
            start = (json.loads(request.body).get("ExclusiveStartKey") or {}).get("sk", {}).get("S")
            served["pages"] += 1
            headers = {"Content-Type": "application/x-amz-json-1.0"}
            return AWSResponse(request.url, 200, headers, _Raw(pages[starts[start]]))
        if recorded is None:
            return None
        status, headers, content = recorded[(op, bytes(request.body))]
        return AWSResponse(request.url, status, headers, _Raw(content))

    def s3(request: Any, event_name: str, **_: Any) -> Any:
        if not event_name.endswith(".GetObject"):
            raise AssertionError(f"unexpected {event_name}")
        served["calls"] += 1
        return AWSResponse(request.url, 200, obj.headers, _Raw(obj.body))

    def nothing_else(event_name: str, **_: Any) -> Any:
        raise AssertionError(f"unexpected {event_name}")

    from moto.core.models import botocore_stubber

    db_client.meta.events.register_first("before-send.dynamodb", dynamodb, unique_id="bench-ddb")
    if recorded is not None:
        # moto's own handler would still run (botocore calls every handler): off meanwhile, and every
        # call of these clients answered here or refused (none may leave the process)
        s3_client.meta.events.register_first("before-send.s3", s3, unique_id="bench-s3")
        events_client().meta.events.register_first(
            "before-send.eventbridge", nothing_else, unique_id="bench-ev"
        )
        botocore_stubber.enabled = False
    try:
        yield served
    finally:
        botocore_stubber.enabled = True
        db_client.meta.events.unregister("before-send.dynamodb", unique_id="bench-ddb")
        s3_client.meta.events.unregister("before-send.s3", unique_id="bench-s3")
        events_client().meta.events.unregister("before-send.eventbridge", unique_id="bench-ev")


def events_client() -> Any:
    from synapse.aws import events

    return events.client()


@contextmanager
def recording(db_client: Any) -> Iterator[dict[Any, Any]]:
    """The DynamoDB calls made meanwhile (through moto), recorded by operation and request body."""
    recorded: dict[Any, Any] = {}
    asked: list[tuple[str, bytes]] = []

    def before(request: Any, event_name: str, **_: Any) -> None:
        asked.append((event_name.rsplit(".", 1)[-1], bytes(request.body)))

    def after(http_response: Any, event_name: str, **_: Any) -> None:
        key = asked.pop()
        if key[0] != "Query":
            recorded[key] = (http_response.status_code, dict(http_response.headers), http_response.content)

    db_client.meta.events.register("before-send.dynamodb", before, unique_id="bench-rec-1")
    db_client.meta.events.register("after-call.dynamodb", after, unique_id="bench-rec-2")
    try:
        yield recorded
    finally:
        db_client.meta.events.unregister("before-send.dynamodb", unique_id="bench-rec-1")
        db_client.meta.events.unregister("after-call.dynamodb", unique_id="bench-rec-2")


class _Object:
    """The snapshot object's GetObject answer, as S3 sends it."""

    def __init__(self, body: bytes, seq: int) -> None:
        self.body = body
        crc = zlib.crc32(body).to_bytes(4, "big")
        self.headers = {
            "Content-Length": str(len(body)),
            "Content-Type": "application/octet-stream",
            "ETag": '"bench"',
            "x-amz-meta-seq": str(seq),
            "x-amz-meta-model": MODEL_KEY,
            "x-amz-server-side-encryption": "aws:kms",
            "x-amz-checksum-crc32": base64.b64encode(crc).decode(),
        }


# the clock the ranking reads, fixed for a run: recency is in the scores, and today's path at 100k takes
# tens of seconds, so two answers ranked at different times could part in the sixth decimal
NOW = time.time()


def _ranked(space: Any, query_vec: np.ndarray) -> list[tuple[str, float]]:
    """What recall does after the query's embedding: load the corpus, score it, the best 10 (at NOW)."""
    from synapse.search import cache, scoring

    corpus = cache.load(space, MODEL_KEY)
    now = NOW
    dense = scoring.similarity(corpus, query_vec, candidates=200)
    best = scoring.best(corpus, QUERY, dense, scoring.live(corpus, now, None, None), now, 10)
    return [(corpus.columns.ids[i], round(score, 6)) for i, score in best]


def _times(fn: Callable[[], Any], repeat: int, before: Callable[[], None]) -> tuple[dict[str, float], Any]:
    samples, got = [], None
    for _ in range(repeat):
        before()
        t0 = time.perf_counter()
        got = fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return summary(samples), got


def cold(n: int, repeat: int, log: Callable[[str], None]) -> dict[str, Any]:
    """One size: today's cold path and the snapshot path, the same mind, the same answer."""
    from synapse.search import cache, corpus, snapshot
    from synapse.store import changelog, codec, db, nuggets, snapshots
    from synapse.store.keys import Space

    t_start = time.perf_counter()
    rng = np.random.default_rng(11)
    vectors = unit_rows(rng, n, decay=True)
    query_vec = unit_rows(rng, 1, decay=True)[0]
    blobs = [codec.make_vector(v, MODEL).data for v in vectors]
    # in key order, as DynamoDB returns a partition (a corpus's rows are in id order)
    full = sorted(
        (nugget_item(i, {"B": blobs[i]}, with_key=True) for i in range(n)), key=lambda it: it["sk"]["S"]
    )
    del vectors, blobs
    space = Space(USER)
    out: dict[str, Any] = {"n": n}
    with moto_aws():
        # position 1: the n memories, packed into the mind's snapshot (as the writer packs a corpus it
        # holds); the memories themselves are not in moto: the full read's pages are answered below
        changelog.transact(changelog.step(space, changelog.read(space), []))
        at1 = changelog.read(space)
        held = corpus.build(nuggets.columns(full), at1.token, MODEL_KEY)
        held.at = at1
        t0 = time.perf_counter()
        body = snapshot.pack(held)
        pack_ms = (time.perf_counter() - t0) * 1000
        del held
        assert snapshots.put(space, at1.epoch, at1.seq, MODEL_KEY, body, None)
        # the tail: two writes since, five memories changed (in moto: they are what the tail reads)
        changed = sorted({i for ids in TAIL_WRITES for i in ids})
        for i in changed:
            full[i] = {
                **full[i],
                "content": {"S": f"edited {i}: the user now prefers a light theme"},
                "rev": {"N": "2"},
            }
        db.batch_write([{"PutRequest": {"Item": full[i]}} for i in changed])
        for ids in TAIL_WRITES:
            said = [changelog.Change.memory(nuggets.nugget_id(full[i]["sk"]["S"]), "updated", 2) for i in ids]
            changelog.transact(changelog.step(space, changelog.read(space), said))
        projected = [
            {k: v for k, v in it.items() if k not in ("pk", "rev", "emb_model", "emb_dim")} for it in full
        ]
        pages = query_pages(full, projected)
        sizes = [item_size(it) for it in full]
        del projected
        log(f"  snapshot n={n}: data ready in {time.perf_counter() - t_start:.1f} s ({len(pages)} pages)")

        def clear() -> None:
            cache.CACHE.clear()

        ddb, s3 = db.client(), snapshots.client()
        obj = _Object(body, at1.seq)
        # each path once through moto, its DynamoDB answers recorded (the pages are answered anyway)
        with recording(ddb) as recorded:
            with answered(ddb, s3, pages, None, obj), patched(snapshots, "enabled", lambda: False):
                clear()
                _ranked(space, query_vec)
            clear()
            _ranked(space, query_vec)
        # then timed with every call answered from those bytes: the client's work only
        with answered(ddb, s3, pages, recorded, obj) as served:
            with patched(snapshots, "enabled", lambda: False):
                today, want = _times(
                    lambda: _ranked(space, query_vec), max(2, repeat // 2) if n > 50_000 else repeat, clear
                )
            assert served["pages"] >= len(pages)
            snap, got = _times(lambda: _ranked(space, query_vec), repeat, clear)
            warm_on, warm_off = _warm(space, query_vec, 10 * repeat)
        # the cold writer's pack: a corpus loaded from the snapshot and its tail (its tokens made on use)
        clear()
        _ranked(space, query_vec)
        loaded = cache.CACHE.stale(cache.owner(space), MODEL_KEY)
        t0 = time.perf_counter()
        snapshot.pack(loaded)
        pack_cold_ms = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        snapshot.unpack(body, MODEL_KEY)
        unpack_ms = (time.perf_counter() - t0) * 1000
    tail_sizes = [sizes[i] for i in changed]
    rcu_today = 1 + query_cost(sizes)["rcu"]
    rcu_snap = 1 + sum(max(1, math.ceil(s / RCU_BYTES)) for s in tail_sizes)
    out.update(
        {
            "same_answer": got == want,
            "answer_top": want[:3],
            # (the first rank where the two answers part, if they do: today's, the snapshot's)
            "first_difference": next(([a, b] for a, b in zip(want, got, strict=False) if a != b), None),
            "today": {
                "ms": today,
                "rcu": rcu_today,
                "dynamodb_bytes": sum(sizes) + 675,
                "query_pages": len(pages),
            },
            "snapshot": {
                "ms": snap,
                "rcu": rcu_snap,
                "dynamodb_bytes": sum(tail_sizes) + 675,
                "s3_gets": 1,
                "s3_bytes": len(body),
                "tail_memories": len(changed),
                "tail_writes": len(TAIL_WRITES),
            },
            "ratio_rcu": round(rcu_snap / rcu_today, 5),
            "ratio_ms": round(snap["median_ms"] / today["median_ms"], 4),
            "snapshot_bytes_per_memory": round(len(body) / n, 1),
            "unpack_ms": round(unpack_ms, 1),
            "pack_ms": round(pack_ms, 1),
            "pack_cold_ms": round(pack_cold_ms, 1),
            "warm": {
                "on": warm_on,
                "off": warm_off,
                "ratio": round(warm_on["median_ms"] / warm_off["median_ms"], 3),
            },
        }
    )
    log(
        f"  snapshot n={n}: today {today['median_ms']:.0f} ms, {rcu_today} RCU → snapshot "
        f"{snap['median_ms']:.0f} ms, {rcu_snap} RCU ({out['ratio_ms'] * 100:.1f} % / "
        f"{out['ratio_rcu'] * 100:.2f} %); same answer {out['same_answer']}"
    )
    return out


def _warm(space: Any, query_vec: np.ndarray, repeat: int) -> tuple[dict[str, float], dict[str, float]]:
    """A recall on a container that holds the mind at its position (the version read, then scoring),
    with snapshots on and off in turn: (on, off)."""
    from synapse.store import snapshots

    _ranked(space, query_vec)
    samples: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(repeat):
        for on in (True, False):
            with patched(snapshots, "enabled", lambda on=on: on):
                t0 = time.perf_counter()
                _ranked(space, query_vec)
                samples[on].append((time.perf_counter() - t0) * 1000)
    return summary(samples[True]), summary(samples[False])


def chat_turns(n: int, repeat: int, log: Callable[[str], None]) -> dict[str, Any]:
    """bench/chatturn.py's warm chat turn with snapshots on and off: read units and time. On and off
    alternate over ROUNDS rounds (the machine's load moves in between), the time the median of each
    side's rounds."""
    from bench import chatturn

    runs: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    for _ in range(CHAT_ROUNDS):
        for on in (True, False):
            runs[on].append(chatturn.turn(n, log, snapshots=on, repeat=repeat))
    side = {
        on: {
            "rcu": got[0]["pair"]["rcu"],
            "ms": round(statistics.median(r["pair_ms"] for r in got), 1),
            "calls": got[0]["calls"],
            "rounds_ms": [r["pair_ms"] for r in got],
        }
        for on, got in runs.items()
    }
    return {
        "on": side[True],
        "off": side[False],
        "ratio_rcu": round(side[True]["rcu"] / side[False]["rcu"], 3),
        "ratio_ms": round(side[True]["ms"] / side[False]["ms"], 3),
    }


def fleet_model(sizes: dict[str, Any]) -> dict[str, float]:
    """What the fleet simulation takes from here: per memory, at the largest size measured."""
    big = sizes[max(sizes, key=int)]
    n = big["n"]
    return {
        "snapshot_bytes_per_memory": big["snapshot_bytes_per_memory"],
        "snapshot_unpack_ms_per_memory": round(big["unpack_ms"] / n, 6),
        "snapshot_pack_ms_per_memory": round(max(big["pack_ms"], big["pack_cold_ms"]) / n, 6),
        "measured_at_memories": n,
    }


def run(sizes: list[int], repeat: int, log: Callable[[str], None]) -> dict[str, Any]:
    from local import moto_speed
    from synapse.core.observability import logger

    moto_speed.install()
    level = logger.log_level
    logger.setLevel("WARNING")  # (each load logs its path at INFO)
    try:
        out: dict[str, Any] = {"sizes": {str(n): cold(n, repeat, log) for n in sizes}}
        out["chat_turn"] = chat_turns(1000, max(3, repeat), log)
    finally:
        logger.setLevel(level)
        moto_speed.uninstall()
    out["fleet_model"] = fleet_model(out["sizes"])
    out["targets"] = {"ratio_rcu": RATIO_RCU, "ratio_ms": RATIO_MS, "warm_ratio": WARM_RATIO}
    medians = [s["warm"]["ratio"] for s in out["sizes"].values()]
    out["warm_ratio"] = round(statistics.median(medians), 3)
    return out
