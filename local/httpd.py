"""The local server's HTTP side: a request read, handed to the runtime, its answer written."""

from __future__ import annotations

import logging
import time
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from local import apigw

if TYPE_CHECKING:
    from local.runtime import LocalRuntime

log = logging.getLogger("local")


class LocalRequestHandler(BaseHTTPRequestHandler):
    rt: LocalRuntime
    protocol_version = "HTTP/1.1"
    server_version = "synapse-local"

    def _serve(self) -> None:
        started = time.monotonic()
        split = urlsplit(self.path)
        length = int(self.headers.get("content-length") or 0)
        if length > apigw.MAX_BODY:
            resp = apigw.error_response(413, "payload_too_large", "The request body is larger than 10 MB.")
            self.close_connection = True
        else:
            body = self.rfile.read(length) if length > 0 else b""
            req = apigw.HttpRequest(
                method=self.command,
                raw_path=split.path or "/",
                raw_query=split.query,
                headers=list(self.headers.items()),
                body=body,
                source_ip=self.client_address[0],
                host=(self.headers.get("host") or f"{self.rt.host}:{self.rt.port}"),
            )
            resp = self.rt.handle(req)
        self.send_response(resp.status)
        for name, value in resp.headers:
            if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(name, value)
        self.send_header("content-length", str(len(resp.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(resp.body)
        log.info(
            "%s %s %d %.0fms", self.command, split.path, resp.status, (time.monotonic() - started) * 1000
        )

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass
