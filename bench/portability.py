"""Portability through the local server (`python -m local`): storing n memories one call each against
`POST /memory/batch` (100 a call), in one run; and writers 1/4/16/40 storing into ONE mind at once
(throughput, p50/p95 of a write), where every write takes the mind's next change-log number in turn.

    .venv/bin/python -m bench.portability              # n=5000, writers 1,4,16,40
    .venv/bin/python -m bench.portability --n 1000 --writers 1,4 --per-writer 10

The server runs with LOCAL_EMBEDDER=none (full-text only): what is measured is the write path (HTTP,
the function, DynamoDB's transactions), not an embedder's CPU, which a batch also makes one call of.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.common import ROOT, machine, percentile
from bench.e2e import Server


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _memory(i: int) -> dict[str, Any]:
    return {"category": "fact", "key": f"fact_{i:06d}", "content": f"Fact number {i}: the sky was clear."}


def one_by_one(server: Server, user: str, n: int) -> float:
    import requests

    headers = {"authorization": f"Bearer {server.token(user)}"}
    with requests.Session() as http:
        t0 = time.perf_counter()
        for i in range(n):
            answer = http.post(f"{server.url}/memory", json=_memory(i), headers=headers, timeout=120)
            assert answer.status_code == 201, answer.text
        return time.perf_counter() - t0


def batched(server: Server, user: str, n: int, size: int = 100) -> float:
    import requests

    headers = {"authorization": f"Bearer {server.token(user)}"}
    with requests.Session() as http:
        t0 = time.perf_counter()
        for start in range(0, n, size):
            items = [_memory(i) for i in range(start, min(n, start + size))]
            body = {"memories": items}
            answer = http.post(f"{server.url}/memory/batch", json=body, headers=headers, timeout=300)
            assert answer.status_code == 200, answer.text
            bad = [r for r in answer.json()["results"] if r["status"] != 201]
            assert not bad, bad[:2]
        return time.perf_counter() - t0


def writers(server: Server, user: str, count: int, per_writer: int) -> dict[str, Any]:
    """`count` threads, each storing `per_writer` memories one call at a time into one mind."""
    import requests

    headers = {"authorization": f"Bearer {server.token(user)}"}
    latencies: list[float] = []
    failures: list[int] = []
    lock = threading.Lock()

    def writer(w: int) -> None:
        with requests.Session() as http:
            for j in range(per_writer):
                body = _memory(w * 10_000 + j) | {"key": f"w{count}_{w:02d}_{j:04d}"}
                t0 = time.perf_counter()
                answer = http.post(f"{server.url}/memory", json=body, headers=headers, timeout=300)
                took = time.perf_counter() - t0
                with lock:
                    latencies.append(took)
                    if answer.status_code != 201:
                        failures.append(answer.status_code)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=count) as pool:
        list(pool.map(writer, range(count)))
    wall = time.perf_counter() - t0
    ordered = sorted(latencies)
    return {
        "writers": count,
        "writes": len(latencies),
        "failures": failures,
        "wall_s": round(wall, 2),
        "writes_per_s": round(len(latencies) / wall, 2),
        "p50_ms": round(percentile(ordered, 50) * 1000, 1),
        "p95_ms": round(percentile(ordered, 95) * 1000, 1),
    }


def run(n: int, writer_counts: list[int], per_writer: int, log: Any = _log) -> dict[str, Any]:
    out: dict[str, Any] = {"n": n}
    with tempfile.TemporaryDirectory(prefix="bench-port-") as tmp:
        server = Server(Path(tmp) / "data", {"LOCAL_EMBEDDER": "none"}).start()
        try:
            # warm both functions (a cold start is not what is compared)
            batched(server, "warm", 2)
            one_by_one(server, "warm2", 2)
            log(f"batch: {n} memories, 100 a call")
            batch_s = batched(server, "batch-user", n)
            log(f"   {batch_s:.1f} s")
            log(f"one call per memory: {n} memories")
            single_s = one_by_one(server, "single-user", n)
            log(f"   {single_s:.1f} s")
            out["store"] = {
                "one_call_each_s": round(single_s, 2),
                "batch_s": round(batch_s, 2),
                "one_call_each_per_memory_ms": round(single_s / n * 1000, 2),
                "batch_per_memory_ms": round(batch_s / n * 1000, 2),
                "speedup": round(single_s / batch_s, 1),
                "target": ">= 10x",
            }
            out["writers"] = []
            for count in writer_counts:
                log(f"writers: {count} into one mind, {per_writer} writes each")
                result = writers(server, f"writers-{count}", count, per_writer)
                log(f"   {result}")
                out["writers"].append(result)
        finally:
            server.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.portability", description=__doc__)
    p.add_argument("--n", type=int, default=5000)
    p.add_argument("--writers", default="1,4,16,40")
    p.add_argument("--per-writer", type=int, default=5)
    p.add_argument("--out", default=str(ROOT / ".bench" / "portability.json"))
    args = p.parse_args(argv)
    counts = [int(x) for x in args.writers.split(",") if x.strip()]
    report = {"machine": machine(), "results": run(args.n, counts, args.per_writer)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps(report["results"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
