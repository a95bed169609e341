"""6. End to end: POST /memory/recall through the local server (`python -m local`), cache on and off;
and 7. the local server's throughput under 8 concurrent clients, its worker pools against one
invocation at a time per function (LOCAL_CONCURRENCY=1), in the same run.

Seeding: the API (POST /memory) costs ~100 ms a memory on this machine, so the nuggets are written
with BatchWriteItem straight into the server's embedded DynamoDB (nugget items as the service
writes them, int8 vectors of model "bench" that the server's full-text-only recall ignores),
followed by a version bump; a few memories also go through POST /memory so the path is exercised.
"""

from __future__ import annotations

import json
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import ROOT, i8s_items, summary, unit_rows
from local.spawn import server_env

QUERIES = [
    "what editor theme does the user prefer",
    "where does the user live",
    "which project has a deadline on friday",
    "what is the dog called",
    "what is the user learning on weekends",
    "latency budget of the payments service",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, data_dir: Path, extra_env: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.secret = secrets.token_urlsafe(32)
        self.extra_env = extra_env
        self.proc: subprocess.Popen[bytes] | None = None
        self.info: dict[str, Any] = {}

    def start(self, timeout: float = 120.0) -> Server:
        import requests

        env = server_env(
            self.port,
            str(self.data_dir),
            self.secret,
            LOCAL_LOG_LEVEL="WARNING",
            POWERTOOLS_LOG_LEVEL="WARNING",
            **self.extra_env,
        )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with (self.data_dir.parent / f"{self.data_dir.name}.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "local", "--template", str(ROOT / "template.yaml")],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        state = self.data_dir / "local.json"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"local server exited ({self.proc.returncode})")
            try:
                info = json.loads(state.read_text())
                if info.get("pid") == self.proc.pid and requests.get(f"{self.url}/health", timeout=2).ok:
                    self.info = info
                    return self
            except (OSError, ValueError, requests.RequestException):
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("local server did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None

    def token(self, sub: str) -> str:
        import jwt

        now = int(time.time())
        return jwt.encode({"sub": sub, "iat": now, "exp": now + 6 * 3600}, self.secret, algorithm="HS256")

    def ddb(self) -> Any:
        import boto3

        return boto3.client(
            "dynamodb",
            endpoint_url=self.info["aws_endpoint"],
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )


def seed(server: Server, user: str, n: int, rng: np.random.Generator) -> float:
    """n nuggets of `user` (BatchWriteItem into the embedded DynamoDB), then the version bump."""
    import requests

    t0 = time.perf_counter()
    ddb = server.ddb()
    table = server.info["resources"]["MemoryTable"]
    items = i8s_items(unit_rows(rng, n), with_key=True)
    for item in items:
        item["pk"] = {"S": f"mem:{user}"}
    for start in range(0, n, 25):
        pending = [{"PutRequest": {"Item": it}} for it in items[start : start + 25]]
        while pending:
            answer = ddb.batch_write_item(RequestItems={table: pending})
            pending = answer.get("UnprocessedItems", {}).get(table, [])
    headers = {"Authorization": f"Bearer {server.token(user)}"}
    body = {"category": "preference", "key": "ui_theme", "content": "Prefers the dark theme in every editor"}
    r = requests.post(
        f"{server.url}/memory", json=body, headers=headers, timeout=120
    )  # also bumps the version
    r.raise_for_status()
    return round(time.perf_counter() - t0, 1)


def measure(
    server: Server, user: str, runs: int, path: str = "/memory/recall", extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`runs` recalls (or context calls: `path`, `extra` body fields); the first (cold with the cache
    on) reported apart. Failures (the local server answers 503 when a function passes its 29 s
    timeout) are counted, not timed."""
    import requests

    session = requests.Session()
    headers = {"Authorization": f"Bearer {server.token(user)}"}
    samples: list[float] = []
    failures: dict[str, int] = {}
    first = None
    for i in range(runs):
        t0 = time.perf_counter()
        try:
            r = session.post(
                f"{server.url}{path}",
                json={"query": QUERIES[i % len(QUERIES)], "limit": 10, **(extra or {})},
                headers=headers,
                timeout=120,
            )
            ok, status = r.ok, str(r.status_code)
        except requests.RequestException as exc:
            ok, status = False, type(exc).__name__
        ms = (time.perf_counter() - t0) * 1000
        if i == 0:
            first = {"ms": round(ms, 1), "status": status}
            if runs > 1:
                continue
        if ok:
            samples.append(ms)
        else:
            failures[status] = failures.get(status, 0) + 1
    out: dict[str, Any] = {"first": first, "failures": failures}
    out.update(summary(samples) if samples else {"median_ms": None, "p95_ms": None, "min_ms": None, "n": 0})
    return out


def write_loop(server: Server, user: str, runs: int) -> dict[str, Any]:
    """Recalls with nothing written between (`quiet`), then a loop of (write one memory, recall): only
    the recalls are timed. A write moves the mind's version: the recall catches up from the log."""
    import requests

    quiet = measure(server, user, runs)
    session = requests.Session()
    headers = {"Authorization": f"Bearer {server.token(user)}"}
    samples: list[float] = []
    for i in range(runs):
        body = {
            "category": "fact",
            "key": f"loop_{i}",
            "content": f"Loop memory {i}: moved the desk to room {i}",
        }
        session.post(f"{server.url}/memory", json=body, headers=headers, timeout=120).raise_for_status()
        t0 = time.perf_counter()
        r = session.post(
            f"{server.url}/memory/recall",
            json={"query": QUERIES[i % len(QUERIES)], "limit": 10},
            headers=headers,
            timeout=120,
        )
        if r.ok:
            samples.append((time.perf_counter() - t0) * 1000)
    after = summary(samples) if samples else {"median_ms": None, "p95_ms": None, "min_ms": None, "n": 0}
    ratio = after["median_ms"] / quiet["median_ms"] if after["median_ms"] and quiet["median_ms"] else None
    return {"quiet": quiet, "after_write": after, "ratio": round(ratio, 3) if ratio is not None else None}


def run(
    sizes: list[int], runs: int, runs_off: int, log: Any, loop_sizes: list[int] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"embedder": "none (LOCAL_EMBEDDER=none: full-text ranking only)", "sizes": {}}
    for mode, extra, count in (("cache_on", {}, runs), ("cache_off", {"RECALL_CACHE": "off"}, runs_off)):
        rng = np.random.default_rng(13)
        with tempfile.TemporaryDirectory(prefix="bench-e2e-") as tmp:
            # each server is seeded on its own (its DATA_DIR is a temporary one)
            server = Server(Path(tmp) / "data", {"LOCAL_EMBEDDER": "none", **extra}).start()
            try:
                for n in sizes:
                    secs = seed(server, f"bench{n}", n, rng)
                    row = out["sizes"].setdefault(str(n), {})
                    row[f"seed_s_{mode}"] = secs
                    row[mode] = measure(server, f"bench{n}", count)
                    log(f"  e2e {mode} n={n}: seeded in {secs} s, {row[mode]}")
                    if mode == "cache_on":
                        # the chat turn's one call: the same recall, and a session's summary and turns
                        _session(server, f"bench{n}")
                        row["context_cache_on"] = measure(
                            server, f"bench{n}", count, "/memory/context", {"sessionId": "chat", "recent": 5}
                        )
                        log(f"  e2e context n={n}: {row['context_cache_on']}")
                if mode == "cache_on":
                    for n in loop_sizes or []:
                        user = f"loop{n}"
                        seed(server, user, n, rng)
                        loop = write_loop(server, user, runs)
                        out.setdefault("write_loop", {})[str(n)] = loop
                        log(f"  e2e write loop n={n}: {loop}")
            finally:
                server.stop()
    return out


def _session(server: Server, user: str) -> None:
    """A session with a few stored turns and a summary chunk, for POST /memory/context."""
    import requests

    headers = {"Authorization": f"Bearer {server.token(user)}"}
    turns = [{"role": "user", "content": f"turn {i}: we talked about the rust service"} for i in range(6)]
    for path, body in (
        ("/memory/ingest", {"sessionId": "chat", "messages": turns}),
        ("/memory/summarize", {"sessionId": "chat"}),
    ):
        requests.post(f"{server.url}{path}", json=body, headers=headers, timeout=120).raise_for_status()


# --- 7. throughput under concurrent clients -----------------------------------------------------------

THROUGHPUT_CLIENTS = 8


def _one_request(session: Any, server: Server, headers: dict[str, str], i: int) -> tuple[bool, float]:
    """The mix: three recalls, then a write (which makes the next recall rebuild its corpus)."""
    import requests

    t0 = time.perf_counter()
    try:
        if i % 4 == 3:
            body = {
                "category": "note",
                "key": f"tp_{i}",
                "content": f"Throughput note {i}: the deploy went fine",
            }
            r = session.post(f"{server.url}/memory", json=body, headers=headers, timeout=120)
        else:
            query = {"query": QUERIES[i % len(QUERIES)], "limit": 5}
            r = session.post(f"{server.url}/memory/recall", json=query, headers=headers, timeout=120)
        ok = r.ok
    except requests.RequestException:
        ok = False
    return ok, (time.perf_counter() - t0) * 1000


def _load(server: Server, users: list[str], per_client: int) -> dict[str, Any]:
    """Every user's client sends `per_client` requests one after the other, all clients at once."""
    import requests

    barrier = threading.Barrier(len(users) + 1)
    results: list[list[tuple[bool, float]]] = []
    lock = threading.Lock()

    def client(user: str) -> None:
        session = requests.Session()
        headers = {"Authorization": f"Bearer {server.token(user)}"}
        barrier.wait(timeout=300)
        mine = [_one_request(session, server, headers, i) for i in range(per_client)]
        with lock:
            results.append(mine)

    with ThreadPoolExecutor(len(users)) as pool:
        futures = [pool.submit(client, u) for u in users]
        barrier.wait(timeout=300)
        t0 = time.perf_counter()
        for f in futures:
            f.result()
        wall = time.perf_counter() - t0
    samples = [ms for mine in results for ok, ms in mine if ok]
    failed = sum(1 for mine in results for ok, _ in mine if not ok)
    stats = summary(samples) if samples else {"median_ms": None, "p95_ms": None, "min_ms": None, "n": 0}
    return {
        "requests_per_s": round(len(samples) / wall, 1),
        "p50_ms": stats["median_ms"],
        "p95_ms": stats["p95_ms"],
        "n": len(samples),
        "failed": failed,
        "seconds": round(wall, 1),
    }


GEMINI_LATENCY = 0.15  # seconds the Gemini double takes to answer each call (a real call: 0.1-0.5 s)


def throughput(
    clients: int = THROUGHPUT_CLIENTS, per_client: int = 24, seed_n: int = 200, log: Any = print
) -> dict[str, Any]:
    """Requests/s, p50 and p95 of `clients` concurrent clients (each its own user, 3 recalls : 1 write)
    against a server with worker pools (LOCAL_CONCURRENCY=4) and one with LOCAL_CONCURRENCY=1 (one
    invocation at a time per function), in two settings: offline (no model: CPU-bound work on the
    machine's cores) and with Gemini (every embedding call a 150 ms wait on a loopback double)."""
    from harness.gemini import GeminiDouble

    out: dict[str, Any] = {
        "clients": clients,
        "requests_per_client": per_client,
        "mix": "3 POST /memory/recall : 1 POST /memory, each client its own user",
        "memories_per_user": seed_n,
        "scenarios": {},
    }
    double = GeminiDouble(latency=GEMINI_LATENCY).start()
    try:
        scenarios = {
            "offline": {"LOCAL_EMBEDDER": "none"},
            "gemini": {
                "LOCAL_EMBEDDER": "none",
                "GEMINI_API_KEY": "bench-fake-key",
                "GEMINI_BASE_URL": double.base_url,
                "GEMINI_TIMEOUT_MS": "10000",
            },
        }
        for scenario, env in scenarios.items():
            runs: dict[str, Any] = {}
            for label, concurrency in (("one_at_a_time", "1"), ("pool", "4")):
                runs[label] = _throughput_run(env, concurrency, clients, per_client, seed_n)
                log(f"  throughput {scenario}, LOCAL_CONCURRENCY={concurrency}: {runs[label]}")
            one, pool = runs["one_at_a_time"], runs["pool"]
            row: dict[str, Any] = {"runs": runs}
            if one["requests_per_s"]:
                row["speedup"] = round(pool["requests_per_s"] / one["requests_per_s"], 2)
            out["scenarios"][scenario] = row
    finally:
        double.stop()
    out["gemini_latency_ms"] = round(GEMINI_LATENCY * 1000)
    return out


def _throughput_run(env: dict[str, str], concurrency: str, clients: int, per_client: int, seed_n: int) -> Any:
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory(prefix="bench-tp-") as tmp:
        server = Server(Path(tmp) / "data", {**env, "LOCAL_CONCURRENCY": concurrency}).start()
        try:
            users = [f"tp{c}" for c in range(clients)]
            for user in users:
                seed(server, user, seed_n, rng)
            # warm up: every client at once, so the pools grow (and their caches fill) as under the load
            _load(server, users, 6)
            row = _load(server, users, per_client)
            row["local_concurrency"] = int(concurrency)
            return row
        finally:
            server.stop()
