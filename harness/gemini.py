"""A local HTTP double of the Gemini REST API, for tests and benchmarks that drive the real
google-genai client.

It listens on 127.0.0.1 (a free port), answers the two routes Synapse uses the way the Developer API
does, records every request, and can be told to fail:

- ``POST /{version}/models/{model}:batchEmbedContents`` → ``{"embeddings": [{"values": [...]}, ...]}``
  (one vector per request, of the requested ``outputDimensionality``, default 3072)
- ``POST /{version}/models/{model}:embedContent`` → ``{"embedding": {"values": [...]}}``
- ``POST /{version}/models/{model}:generateContent`` → one candidate whose text is ``generate(body)``

Vectors are deterministic (seeded by a hash of the embedded text) and deliberately not unit length,
so tests can see the caller normalise them.

Usage (tests/conftest.py makes `running_double` the `gemini_double` fixture)::

    def test_something(gemini_double):
        gemini_double.fail_next(1, 429)
        gemini_double.delay_next(1, 2.0, rpc="generateContent")  # answered normally, 2 s late
        gemini_double.generate = lambda body: '{"nuggets": []}'
        ...
        assert gemini_double.requests[0].path.endswith(":batchEmbedContents")
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pytest

_ROUTE = re.compile(r"^/(?P<version>v1[a-z0-9]*)/models/(?P<model>[^:/]+):(?P<method>[A-Za-z]+)$")


@dataclass
class RecordedRequest:
    method: str
    path: str  # without the query string
    query: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON (or None)
    arrived: float = field(default_factory=time.monotonic)  # when the double read it (before any delay)

    @property
    def model(self) -> str | None:
        m = _ROUTE.match(self.path)
        return m.group("model") if m else None

    @property
    def rpc(self) -> str | None:
        m = _ROUTE.match(self.path)
        return m.group("method") if m else None

    def embedded_texts(self) -> list[str]:
        """The texts of an embedding request, one per requested vector."""
        if self.rpc == "batchEmbedContents":
            items = self.body.get("requests", [])
            return ["".join(p.get("text", "") for p in r["content"]["parts"]) for r in items]
        if self.rpc == "embedContent":
            return ["".join(p.get("text", "") for p in self.body["content"]["parts"])]
        return []


@dataclass
class _Failure:
    status: int | None  # None: hang
    hang_seconds: float = 0.0
    retry_after: int | None = None


def fake_vector(text: str, dim: int) -> list[float]:
    """Deterministic pseudo-embedding of `text`: same text → same vector; not unit length."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    vec = np.random.default_rng(seed).standard_normal(dim) * 3.0
    return [float(round(x, 6)) for x in vec]


def _default_generate(body: dict[str, Any]) -> str:
    config = body.get("generationConfig") or {}
    if config.get("responseMimeType") == "application/json":
        return json.dumps({"nuggets": []})
    return "A short summary."


@dataclass
class GeminiDouble:
    """The double. `start()` it, point `GEMINI_BASE_URL` at `.base_url`, `stop()` it."""

    generate: Callable[[dict[str, Any]], str] = _default_generate
    latency: float = 0.0  # seconds added to every answer (a model's own latency; benchmarks use it)
    requests: list[RecordedRequest] = field(default_factory=list)
    _failures: deque[_Failure] = field(default_factory=deque)
    _delays: list[tuple[str | None, float]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _release: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> GeminiDouble:
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:
                double._handle(self)

            def do_GET(self) -> None:
                double._handle(self)

        self._release.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="gemini-double",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()  # let hanging handlers finish
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the double first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # --- programming -----------------------------------------------------------------------------

    def fail_next(self, n: int = 1, status: int = 503, retry_after: int | None = None) -> None:
        """The next `n` requests answer `status` with a Google-style error body."""
        with self._lock:
            self._failures.extend(_Failure(status, retry_after=retry_after) for _ in range(n))

    def hang_next(self, n: int = 1, seconds: float = 5.0) -> None:
        """The next `n` requests get no answer for `seconds` (past the client's timeout)."""
        with self._lock:
            self._failures.extend(_Failure(None, hang_seconds=seconds) for _ in range(n))

    def delay_next(self, n: int = 1, seconds: float = 2.0, rpc: str | None = None) -> None:
        """The next `n` requests (of that RPC, e.g. "generateContent", if given) are answered as
        usual, `seconds` late (a slow model: within the client's timeout, unlike `hang_next`)."""
        with self._lock:
            self._delays.extend((rpc, seconds) for _ in range(n))

    def reset(self) -> None:
        with self._lock:
            self._failures.clear()
            self._delays.clear()
            self.requests.clear()
        self.generate = _default_generate

    # --- inspection ------------------------------------------------------------------------------

    def calls(self, rpc: str) -> list[RecordedRequest]:
        """Recorded requests of one RPC, e.g. ``calls("batchEmbedContents")``."""
        return [r for r in self.requests if r.rpc == rpc]

    # --- serving ---------------------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        path, _, query = h.path.partition("?")
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        record = RecordedRequest(h.command, path, query, {k.lower(): v for k, v in h.headers.items()}, body)
        with self._lock:
            self.requests.append(record)
            failure = self._failures.popleft() if self._failures else None
            delay = next((i for i, (rpc, _) in enumerate(self._delays) if rpc in (None, record.rpc)), None)
            seconds = self._delays.pop(delay)[1] if delay is not None else 0.0
        if seconds or self.latency:
            self._release.wait(seconds + self.latency)  # (stop() cuts it short)

        if failure is not None and failure.status is None:
            self._release.wait(failure.hang_seconds)
            with contextlib.suppress(OSError):  # the client gave up; that is the point
                self._send(h, 504, _error_body(504, "DEADLINE_EXCEEDED", "hung"))
            return
        if failure is not None:
            assert failure.status is not None
            status_name = {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}.get(
                failure.status, "UNKNOWN"
            )
            extra = {"Retry-After": str(failure.retry_after)} if failure.retry_after is not None else {}
            self._send(h, failure.status, _error_body(failure.status, status_name, "injected"), extra)
            return

        m = _ROUTE.match(path)
        if m is None or h.command != "POST" or not isinstance(body, dict):
            self._send(h, 404, _error_body(404, "NOT_FOUND", f"no route {h.command} {path}"))
            return
        rpc = m.group("method")
        if rpc == "batchEmbedContents":
            out = {
                "embeddings": [
                    {"values": fake_vector(text, int(req.get("outputDimensionality") or 3072))}
                    for req, text in zip(body.get("requests", []), record.embedded_texts(), strict=True)
                ]
            }
        elif rpc == "embedContent":
            dim = int(body.get("outputDimensionality") or 3072)
            out = {"embedding": {"values": fake_vector(record.embedded_texts()[0], dim)}}
        elif rpc == "generateContent":
            try:
                text = self.generate(body)
            except Exception as exc:  # noqa: BLE001  # a broken canned function is a test bug: a 500
                self._send(h, 500, _error_body(500, "INTERNAL", f"double: {exc!r}"))
                return
            out = {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": text}]},
                        "finishReason": "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 10, "totalTokenCount": 20},
                "modelVersion": m.group("model"),
            }
        else:
            self._send(h, 404, _error_body(404, "NOT_FOUND", f"no method {rpc}"))
            return
        self._send(h, 200, out)

    @staticmethod
    def _send(
        h: BaseHTTPRequestHandler, status: int, payload: Any, extra: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode("utf-8")
        h.send_response(status)
        h.send_header("Content-Type", "application/json; charset=UTF-8")
        h.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)


def _error_body(code: int, status: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}


@contextlib.contextmanager
def running_double(monkeypatch: pytest.MonkeyPatch) -> Iterator[GeminiDouble]:
    """A running double, with the environment pointing the real client at it and fast retries.

    Sets GEMINI_API_KEY (fake), GEMINI_BASE_URL, GEMINI_TIMEOUT_MS=1000, GEMINI_ATTEMPTS=3 and tiny
    retry delays; clears the settings and client caches (`state.reset()`) before and after.
    """
    from synapse.core import state

    double = GeminiDouble().start()
    monkeypatch.setenv("GEMINI_API_KEY", "test-fake-gemini-key")
    monkeypatch.setenv("GEMINI_BASE_URL", double.base_url)
    monkeypatch.setenv("GEMINI_TIMEOUT_MS", "1000")
    monkeypatch.setenv("GEMINI_ATTEMPTS", "3")
    monkeypatch.setenv("GEMINI_RETRY_INITIAL_DELAY", "0.01")
    monkeypatch.setenv("GEMINI_RETRY_MAX_DELAY", "0.05")
    state.reset()
    try:
        yield double
    finally:
        double.stop()
        state.reset()
