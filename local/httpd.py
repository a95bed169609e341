"""The local server's HTTP side: requests read (chunked bodies too) and every answer in the envelope.

http.server answers some requests itself, before any routing: a bad request line (400), a request line
over 64 KiB (414), a header line over 64 KiB or more than 100 headers (431), HTTP/2 (505), a method it
has no `do_` for (501). Its pages are HTML; here `send_error` writes the contract's envelope instead
(`application/json; charset=utf-8`, `{"error": {"code", "message"}}`), the code being the status's
name in snake_case (`request_header_fields_too_large`, `uri_too_long`, `bad_request`). Every method
is routed (`__getattr__` answers any `do_<METHOD>`), so a method the API does not have is a 404
`not_found`, as API Gateway answers for a route it does not have.

An HTTP/0.9 request line (`GET /path`: no version, no headers) is a 505 like HTTP/2, with an HTTP/1.1
status line (http.server would wait for headers 0.9 does not send, then write the route's body with no
status line). A client that hangs up before its answer costs one log line, not a traceback.
"""

from __future__ import annotations

import logging
import re
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from local import apigw

if TYPE_CHECKING:
    from local.runtime import LocalRuntime

log = logging.getLogger("local")

_MAX_LINE = 65536  # http.server's own limit on a request or header line
_MAX_TRAILERS = 100
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
_DIGITS = re.compile(r"[0-9]{1,19}")
_MESSAGES = {
    400: "The request could not be read ({detail}).",
    414: "The request line is longer than 64 KiB.",
    431: "A request header is longer than 64 KiB, or there are more than 100 of them.",
    505: "Only HTTP/1.0 and HTTP/1.1 are supported.",
}


def status_code(status: int) -> str:
    """The envelope's code for a status of http.server's own: its name, in snake_case."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        return "http_error"
    return re.sub(r"[^a-z0-9]+", "_", phrase.lower()).strip("_")


class BadBody(Exception):
    """The body cannot be read; `.response` says why (and the connection is closed after it)."""

    def __init__(self, response: apigw.HttpResponse) -> None:
        super().__init__(response.status)
        self.response = response


def _bad_request(why: str) -> BadBody:
    return BadBody(apigw.error_response(400, "bad_request", f"The request body could not be read: {why}."))


def _too_large() -> BadBody:
    return BadBody(apigw.error_response(413, "payload_too_large", "The request body is larger than 10 MB."))


class LocalRequestHandler(BaseHTTPRequestHandler):
    rt: LocalRuntime
    protocol_version = "HTTP/1.1"
    server_version = "synapse-local"

    # --- reading -------------------------------------------------------------------------------

    def read_body(self) -> bytes:
        """The request body, whether sized by Content-Length or sent with Transfer-Encoding: chunked."""
        codings = [
            c.strip().lower()
            for value in self.headers.get_all("transfer-encoding") or []
            for c in value.split(",")
            if c.strip()
        ]
        if codings:
            if codings != ["chunked"]:
                raise _bad_request(f"Transfer-Encoding {', '.join(codings)} is not supported, only chunked")
            # (a Content-Length beside it is ignored, as HTTP/1.1 says)
            return self._read_chunked()
        values = self.headers.get_all("content-length") or []
        if not values:
            return b""
        lengths = {v.strip() for value in values for v in value.split(",")}
        if len(lengths) != 1 or not _DIGITS.fullmatch(next(iter(lengths))):
            raise _bad_request("Content-Length is not one whole number")
        length = int(next(iter(lengths)))
        if length > apigw.MAX_BODY:
            raise _too_large()
        body = self.rfile.read(length) if length else b""
        if len(body) < length:
            raise _bad_request("it ended before its Content-Length")
        return body

    def _read_chunked(self) -> bytes:
        body = bytearray()
        while True:
            line = self.rfile.readline(_MAX_LINE + 1)
            if not line.endswith(b"\n"):
                raise _bad_request("a chunk size line is missing or too long")
            size_text = line.split(b";", 1)[0].strip()  # chunk extensions are ignored
            if not _HEX.fullmatch(size_text):
                raise _bad_request("a chunk size is not a hexadecimal number")
            size = int(size_text, 16)
            if size == 0:
                break
            if len(body) + size > apigw.MAX_BODY:
                raise _too_large()
            chunk = self.rfile.read(size)
            if len(chunk) < size or self.rfile.readline(3) not in (b"\r\n", b"\n"):
                raise _bad_request("a chunk is shorter than its size")
            body += chunk
        for _ in range(_MAX_TRAILERS + 1):  # trailer fields, up to the empty line
            line = self.rfile.readline(_MAX_LINE + 1)
            if line in (b"\r\n", b"\n", b""):
                return bytes(body)
        raise _bad_request("too many trailer fields")

    # --- the request line ----------------------------------------------------------------------

    def parse_request(self) -> bool:
        words = self.raw_requestline.split()
        if len(words) == 2 and words[0] == b"GET":
            # HTTP/0.9 (only GET has a 0.9 form; "POST /x" stays http.server's 400). Refused at once:
            # its headers are not read, since a 0.9 client sends none.
            self.command, self.request_version, self.close_connection = None, "HTTP/0.9", True
            self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
            self.send_error(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, "HTTP/0.9")
            return False
        return super().parse_request()

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except ConnectionError as exc:  # BrokenPipeError, ConnectionResetError, ConnectionAbortedError
            # the client hung up before its answer: nobody is left to tell, and nothing failed here
            self.close_connection = True
            method = getattr(self, "command", None) or "-"
            path = urlsplit(getattr(self, "path", None) or "").path or "-"  # (no query string in the log)
            log.info("%s %s: the client hung up before its answer (%s)", method, path, type(exc).__name__)

    # --- serving -------------------------------------------------------------------------------

    def _serve(self) -> None:
        started = time.monotonic()
        split = urlsplit(self.path)
        try:
            body = self.read_body()
        except BadBody as bad:
            self.close_connection = True
            resp = bad.response
        else:
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
        self._answer(resp)
        log.info(
            "%s %s %d %.0fms", self.command, split.path, resp.status, (time.monotonic() - started) * 1000
        )

    def __getattr__(self, name: str) -> Any:
        # every method reaches the router (http.server would answer one it has no do_ for with 501)
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)

    def _answer(self, resp: apigw.HttpResponse) -> None:
        self.send_response(resp.status)
        for name, value in resp.headers:
            if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(name, value)
        if self.close_connection:
            self.send_header("connection", "close")
        self.send_header("content-length", str(len(resp.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(resp.body)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (bad request line, 414, 431, 505), in the contract's envelope."""
        if self.request_version == "HTTP/0.9" or not self.request_version:
            # a request line too broken to name a version: answer as HTTP/1.1 (with a status line)
            self.request_version = "HTTP/1.1"
        self.close_connection = True
        detail = (message or HTTPStatus(code).phrase).rstrip(".")
        text = _MESSAGES.get(code, "{detail}.").format(detail=detail)
        resp = apigw.error_response(code, status_code(code), text)
        log.info("refused a request: %d %s", code, detail)
        self._answer(resp)

    def log_message(self, format: str, *args: Any) -> None:
        pass
