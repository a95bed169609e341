"""Lambda functions as Lambda runs them: each invocation in a worker process that handles one request at
a time, a warm pool of such workers per function, more started under load up to a bound.

Why processes: Powertools keeps the current request in class-level state (`APIGatewayHttpResolver.resolve`
stores the event on the `BaseRouter` class; the shared Logger and Metrics hold per-request keys), which
is right on Lambda, where a process serves one request at a time, and wrong for two threads of one
process (CI once caught an ingest processed with another client's body). A worker (`local.worker`) is a
fresh interpreter that imports its function once (the cold start, on first use) and then serves one
invocation after another (warm). A function's pool starts another worker only when every worker it has
is busy, up to `limit` (LOCAL_CONCURRENCY); past that, requests wait for the first worker to come free.
A request never waits behind another function's call.

A worker that dies (a crash, `os._exit`, a signal) fails the invocation it was running with
`WorkerCrashed` (the server answers 500) and is replaced by a new one the next time the pool needs one.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import IO, Any

from local.template import Function
from local.worker import ERROR, RESULT

log = logging.getLogger("local.functions")

DEFAULT_CONCURRENCY = 4
INIT_TIMEOUT = 120.0  # seconds a cold start may take before the worker is given up

# the directory that holds the `local` package: workers run `python -m local.worker`
_PROJECT = str(Path(__file__).resolve().parent.parent)
_path_lock = threading.Lock()


def add_to_path(*dirs: Path) -> None:
    """Make directories importable in this process (the server imports the layer's `synapse` too)."""
    with _path_lock:
        for d in dirs:
            entry = str(d)
            if entry not in sys.path:
                sys.path.append(entry)


class InvokeError(RuntimeError):
    """An invocation did not return a result."""


def reason(exc: BaseException) -> str:
    """What a log line says of a failed invocation: the handler's error type, or what befell its worker
    (never the error's message, which may hold user data)."""
    if isinstance(exc, FunctionError):
        return exc.error_type
    if isinstance(exc, InvokeError):
        return str(exc)
    return type(exc).__name__


class FunctionError(InvokeError):
    """The handler raised (or its module failed to load): Lambda's error payload is in `.payload`."""

    def __init__(self, function: str, payload: dict[str, Any]) -> None:
        self.function = function
        self.payload = payload
        self.error_type = str(payload.get("errorType") or "Error")
        super().__init__(f"{function}: {self.error_type}")


class WorkerCrashed(InvokeError):
    """The worker process died before it answered."""


class PoolClosed(InvokeError):
    """The server is shutting down."""


@dataclass(frozen=True)
class Answer:
    """One invocation's outcome: the payload exactly as Lambda's runtime serialised it."""

    payload: bytes
    error: bool  # True: the payload is Lambda's error object
    cold: bool  # this invocation started its worker
    init_ms: float
    duration_ms: float
    pid: int

    def value(self) -> Any:
        return json.loads(self.payload)


class Worker:
    """One process of one function."""

    _ids = itertools.count(1)

    def __init__(self, fn: Function, env: Mapping[str, str], paths: list[str], stdout: int | IO[Any] | None):
        self.fn = fn
        self.id = next(self._ids)
        ours, theirs = socket.socketpair()
        try:
            self.proc = subprocess.Popen(  # noqa: S603 - this interpreter, our own module
                [sys.executable, "-m", "local.worker", str(theirs.fileno())],
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                pass_fds=(theirs.fileno(),),
                close_fds=True,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.pid = self.proc.pid
        self.busy_since: float | None = None
        self.last_used = time.monotonic()
        started = time.perf_counter()
        try:
            spec = {
                "name": fn.logical_id,
                "file": str(fn.file),
                "attr": fn.attr,
                "code_dir": str(fn.code_dir),
                "paths": paths,
                "memory": fn.memory,
                "timeout": fn.timeout,
            }
            self.conn.send_bytes(json.dumps(spec).encode())
            if not self.conn.poll(INIT_TIMEOUT):
                raise WorkerCrashed(f"{fn.logical_id}: the worker did not start in {INIT_TIMEOUT:.0f} s")
            hello = json.loads(self.conn.recv_bytes())
        except (EOFError, OSError) as exc:
            self.kill()
            raise WorkerCrashed(f"{fn.logical_id}: the worker exited while starting") from exc
        except BaseException:
            self.kill()
            raise
        self.init_ms = (time.perf_counter() - started) * 1000
        if not hello.get("ready"):
            self.kill()
            raise FunctionError(fn.logical_id, {k: v for k, v in hello.items() if k != "ready"})

    def call(self, event: Any, request_id: str | None) -> tuple[bytes, bool]:
        """Run one invocation; returns (payload, is_error). Raises WorkerCrashed if the process dies."""
        message = json.dumps({"event": event, "requestId": request_id}).encode()
        try:
            self.conn.send_bytes(message)
            answer = self.conn.recv_bytes()
        except (EOFError, OSError) as exc:
            code = self.proc.poll()
            raise WorkerCrashed(
                f"{self.fn.logical_id}: worker {self.pid} exited"
                + (f" with status {code}" if code is not None else "")
            ) from exc
        tag, payload = answer[:1], answer[1:]
        if tag == RESULT:
            return payload, False
        if tag == ERROR:
            return payload, True
        raise WorkerCrashed(f"{self.fn.logical_id}: worker {self.pid} sent an unknown answer")

    def close(self, timeout: float = 2.0) -> None:
        """Ask the worker to exit (it does when its socket closes); kill it if it does not."""
        with contextlib.suppress(OSError):
            self.conn.close()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.close()
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not refused
            log.error("worker %s of %s did not die", self.pid, self.fn.logical_id)

    def alive(self) -> bool:
        return self.proc.poll() is None


class Pool:
    """The warm workers of one function, at most `limit` of them."""

    def __init__(
        self,
        fn: Function,
        env: Mapping[str, str],
        limit: int,
        paths: list[str],
        stdout: int | IO[Any] | None = None,
    ) -> None:
        if limit < 1:
            raise ValueError("a pool needs room for at least one worker")
        self.fn = fn
        self.env = dict(env)
        self.limit = limit
        self.paths = paths
        self.stdout = stdout
        self._idle: list[Worker] = []  # the most recently used last: reused first, as Lambda does
        self._busy: set[Worker] = set()
        self._starting = 0
        self._closed = False
        self._cond = threading.Condition()
        self.started = 0  # cold starts, for logs and tests
        self.crashed = 0

    # --- bookkeeping ---------------------------------------------------------------------------

    @property
    def size(self) -> int:
        with self._cond:
            return len(self._idle) + len(self._busy) + self._starting

    def pids(self) -> list[int]:
        with self._cond:
            return [w.pid for w in [*self._idle, *self._busy]]

    def _acquire(self) -> tuple[Worker | None, bool]:
        """A warm worker, or (None, True) when the caller may start one; waits when the pool is full."""
        with self._cond:
            while True:
                if self._closed:
                    raise PoolClosed(f"{self.fn.logical_id}: the server is shutting down")
                while self._idle:
                    worker = self._idle.pop()
                    if worker.alive():
                        self._busy.add(worker)
                        return worker, False
                    self.crashed += 1  # it died while idle (killed from outside)
                    worker.kill()
                if len(self._busy) + self._starting < self.limit:
                    self._starting += 1
                    return None, True
                self._cond.wait()

    def _start(self) -> Worker:
        try:
            worker = Worker(self.fn, self.env, self.paths, self.stdout)
        except BaseException:
            with self._cond:
                self._starting -= 1
                self._cond.notify()
            raise
        with self._cond:
            self._starting -= 1
            self.started += 1
            self._busy.add(worker)
            count = len(self._busy) + len(self._idle)
        log.info(
            "%s: cold start of worker %d (pid %d; %d of at most %d) in %.0f ms",
            self.fn.logical_id,
            worker.id,
            worker.pid,
            count,
            self.limit,
            worker.init_ms,
        )
        return worker

    def _release(self, worker: Worker, keep: bool) -> None:
        with self._cond:
            self._busy.discard(worker)
            closed = self._closed
            if keep and not closed:
                worker.last_used = time.monotonic()
                self._idle.append(worker)
            self._cond.notify()
        if not keep:
            worker.kill()
        elif closed:
            worker.close()

    # --- use -----------------------------------------------------------------------------------

    def invoke(self, event: Any, request_id: str | None = None) -> Answer:
        worker, start = self._acquire()
        init_ms = 0.0
        if start:
            worker = self._start()
            init_ms = worker.init_ms
        assert worker is not None
        began = time.perf_counter()
        try:
            payload, is_error = worker.call(event, request_id)
        except WorkerCrashed:
            with self._cond:
                self.crashed += 1
            self._release(worker, keep=False)
            raise
        except BaseException:
            self._release(worker, keep=False)
            raise
        self._release(worker, keep=True)
        return Answer(payload, is_error, start, init_ms, (time.perf_counter() - began) * 1000, worker.pid)

    def reap(self, idle_seconds: float) -> int:
        """Stop the workers that have been idle longer than that (Lambda reclaims idle containers too)."""
        cutoff = time.monotonic() - idle_seconds
        with self._cond:
            old = [w for w in self._idle if w.last_used < cutoff]
            self._idle = [w for w in self._idle if w.last_used >= cutoff]
        for worker in old:
            worker.close()
        if old:
            log.info("%s: %d idle workers stopped", self.fn.logical_id, len(old))
        return len(old)

    def close(self, timeout: float = 5.0) -> None:
        """Stop every worker: idle ones at once, busy ones when they finish or at the deadline."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._cond.notify_all()
        for worker in idle:
            worker.close()
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._busy and time.monotonic() < deadline:
                self._cond.wait(timeout=max(0.0, deadline - time.monotonic()))
            busy = list(self._busy)
        for worker in busy:  # still running at the deadline: the request answers 500
            worker.kill()


class Functions:
    """One pool per function of the template, each started lazily."""

    def __init__(
        self,
        functions: Mapping[str, Function],
        env: Mapping[str, Mapping[str, str]] | None = None,
        limit: int = DEFAULT_CONCURRENCY,
        paths: list[Path] | None = None,
        stdout: int | IO[Any] | None = None,
        idle_seconds: float = 0.0,
    ) -> None:
        """`env`: each function's environment by logical id (one missing from it, or every function
        when `env` is None, gets this process's environment). `idle_seconds` > 0: workers idle for
        longer are stopped (the next request is a cold start again)."""
        self.limit = limit
        path_list = [str(p) for p in paths or []]
        self.pools: dict[str, Pool] = {}
        for name, fn in functions.items():
            chosen = (env or {}).get(name)
            fn_env = _with_project_path(dict(os.environ if chosen is None else chosen))
            self.pools[name] = Pool(fn, fn_env, limit, path_list, stdout)
        self.idle_seconds = idle_seconds
        self._stop = threading.Event()
        self._reaper: threading.Thread | None = None
        if idle_seconds > 0:
            self._reaper = threading.Thread(target=self._reap, name="worker-reaper", daemon=True)
            self._reaper.start()

    def _reap(self) -> None:
        every = min(30.0, max(0.1, self.idle_seconds / 4))
        while not self._stop.wait(every):
            for pool in self.pools.values():
                try:
                    pool.reap(self.idle_seconds)
                except Exception as exc:  # noqa: BLE001 - tried again next round
                    log.warning("stopping idle workers of %s failed: %s", pool.fn.logical_id, exc)

    def invoke_raw(self, name: str, event: Any, request_id: str | None = None) -> Answer:
        """Run the function once; the answer carries Lambda's payload, error or not."""
        pool = self.pools.get(name)
        if pool is None:
            raise KeyError(f"no function {name!r} in the template")
        return pool.invoke(event, request_id)

    def invoke(self, name: str, event: Any, request_id: str | None = None) -> Any:
        """Run the function once and return its result; raises FunctionError when it raised."""
        answer = self.invoke_raw(name, event, request_id)
        if answer.error:
            raise FunctionError(name, json.loads(answer.payload))
        return answer.value()

    def close(self, timeout: float = 5.0) -> None:
        """Stop every pool's workers (in parallel: a busy worker of one function holds no other up)."""
        self._stop.set()
        threads = [
            threading.Thread(target=pool.close, args=(timeout,), name=f"stop-{name}", daemon=True)
            for name, pool in self.pools.items()
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout + 10)


def _with_project_path(env: dict[str, str]) -> dict[str, str]:
    """`python -m local.worker` must find the `local` package wherever the server was started from."""
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if _PROJECT not in parts:
        env["PYTHONPATH"] = os.pathsep.join([*parts, _PROJECT])
    return env
