"""A webhook receiver on loopback for tests and benchmarks: it records every request (headers, body,
when it arrived) and answers what the test says (a status, after an optional pause)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.time() when it arrived


@dataclass
class Receiver:
    url: str
    port: int
    requests: list[Received] = field(default_factory=list)
    status: int = 200
    answer: bytes = b"ok"
    pause: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)  # extra answer headers (Location, ...)
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        """Until `count` requests have arrived (or the timeout): the requests so far."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.requests) < count and time.monotonic() < deadline:
                self.arrived.wait(max(0.0, deadline - time.monotonic()))
            return list(self.requests)


@contextmanager
def running_receiver(path: str = "/hook") -> Iterator[Receiver]:
    box: list[Receiver] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(size)
            rec = box[0]
            if rec.pause:
                time.sleep(rec.pause)
            with rec.arrived:
                rec.requests.append(Received(self.path, dict(self.headers.items()), body, time.time()))
                rec.arrived.notify_all()
            self.send_response(rec.status)
            for name, value in rec.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(rec.answer)))
            self.end_headers()
            self.wfile.write(rec.answer)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    box.append(Receiver(url=f"http://127.0.0.1:{port}{path}", port=port))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield box[0]
    finally:
        server.shutdown()
        server.server_close()
