"""The local server's HTTP edge: chunked bodies read like any other, and every answer in the envelope,
those http.server gives by itself included (bad request line, 414, 431, 505, unknown methods)."""

from __future__ import annotations

import json
import socket
import struct
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.e2e.conftest import LocalServer

JSON = "application/json; charset=utf-8"


def raw_exchange(server: LocalServer, data: bytes, timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
    """Send bytes as they are; read one answer: (status, lower-cased headers, body)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        sock.sendall(data)
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
        head, _, body = buf.partition(b"\r\n\r\n")
        lines = head.decode("iso-8859-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {
            k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)
        }
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    return status, headers, body


def envelope(status: int, headers: dict[str, str], body: bytes, code: str) -> dict[str, Any]:
    assert headers.get("content-type") == JSON, headers
    parsed = json.loads(body)
    assert set(parsed) == {"error"}, parsed
    assert parsed["error"]["code"] == code, (status, parsed)
    assert isinstance(parsed["error"]["message"], str) and parsed["error"]["message"].strip()
    assert b"<html" not in body.lower() and b"<!doctype" not in body.lower()
    return dict(parsed["error"])


def resp_envelope(resp: requests.Response, code: str) -> dict[str, Any]:
    return envelope(resp.status_code, {k.lower(): v for k, v in resp.headers.items()}, resp.content, code)


def chunks(data: bytes, size: int = 16 * 1024) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


@pytest.fixture
def me(local_server: LocalServer) -> dict[str, str]:
    return local_server.headers(local_server.make_jwt(f"http-{uuid.uuid4().hex[:10]}"))


# --- chunked bodies ----------------------------------------------------------------------------------


def test_a_chunked_body_is_read_like_any_other(local_server: LocalServer, me: dict[str, str]) -> None:
    # Given a valid create sent with Transfer-Encoding: chunked (a generator body)
    body = json.dumps({"category": "preference", "key": "ui_theme", "content": "Prefers dark theme"}).encode()
    resp = requests.post(f"{local_server.url}/memory", headers=me, data=chunks(body, 7), timeout=30)
    # Then it is created, with its content
    assert resp.request.headers.get("Transfer-Encoding") == "chunked"
    assert resp.status_code == 201, resp.text
    assert resp.json()["content"] == "Prefers dark theme"


def test_a_chunked_body_over_256_kib_is_413_like_a_plain_one(
    local_server: LocalServer, me: dict[str, str]
) -> None:
    big = json.dumps({"category": "fact", "key": "big", "content": "x" * (300 * 1024)}).encode()
    chunked = requests.post(f"{local_server.url}/memory", headers=me, data=chunks(big), timeout=30)
    plain = requests.post(f"{local_server.url}/memory", headers=me, data=big, timeout=30)
    assert (chunked.status_code, plain.status_code) == (413, 413)
    assert resp_envelope(chunked, "payload_too_large") == resp_envelope(plain, "payload_too_large")


def test_a_malformed_chunked_body_is_400_in_the_envelope(local_server: LocalServer) -> None:
    request = (
        b"POST /memory HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n"
        b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"
    )
    status, headers, body = raw_exchange(local_server, request)
    assert status == 400
    envelope(status, headers, body, "bad_request")
    assert headers.get("connection") == "close"


def test_a_content_length_that_is_not_a_number_is_400_in_the_envelope(local_server: LocalServer) -> None:
    status, headers, body = raw_exchange(
        local_server, b"POST /memory HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n"
    )
    assert status == 400
    envelope(status, headers, body, "bad_request")


# --- http.server's own answers, in the envelope --------------------------------------------------------


@pytest.mark.parametrize("method", ["TRACE", "CONNECT", "PROPFIND", "BREW"])
def test_a_method_the_api_does_not_route_is_404_like_an_unknown_route(
    method: str, local_server: LocalServer, fixture_server: LocalServer
) -> None:
    resp = requests.request(method, f"{local_server.url}/health", timeout=10)
    assert resp.status_code == 404
    resp_envelope(resp, "not_found")
    # even on an ANY route: API Gateway's HTTP APIs route only their own methods
    resp = requests.request(method, f"{fixture_server.url}/echo", timeout=10)
    assert resp.status_code == 404
    resp_envelope(resp, "not_found")


def test_an_authorization_header_over_64_kib_is_431_in_the_envelope(local_server: LocalServer) -> None:
    resp = requests.get(
        f"{local_server.url}/memory/recall",
        headers={"Authorization": "Bearer " + "a" * (65 * 1024)},
        timeout=10,
    )
    assert resp.status_code == 431
    resp_envelope(resp, "request_header_fields_too_large")


def test_more_than_100_headers_is_431_in_the_envelope(local_server: LocalServer) -> None:
    lines = b"".join(b"X-H%d: v\r\n" % i for i in range(120))
    status, headers, body = raw_exchange(
        local_server, b"GET /health HTTP/1.1\r\nHost: x\r\n" + lines + b"\r\n"
    )
    assert status == 431
    envelope(status, headers, body, "request_header_fields_too_large")


def test_a_request_line_over_64_kib_is_414_in_the_envelope(local_server: LocalServer) -> None:
    path = b"/health?q=" + b"a" * (66 * 1024)
    status, headers, body = raw_exchange(local_server, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 414
    envelope(status, headers, body, "uri_too_long")


@pytest.mark.parametrize(
    "line", [b"GARBAGE", b"GET /health HTTP/1.1 extra", b"POST /memory", b"GET /health HTTP/x.y"]
)
def test_a_bad_request_line_is_400_in_the_envelope(line: bytes, local_server: LocalServer) -> None:
    status, headers, body = raw_exchange(local_server, line + b"\r\nHost: x\r\n\r\n")
    assert status == 400
    envelope(status, headers, body, "bad_request")


def test_http_2_is_505_in_the_envelope(local_server: LocalServer) -> None:
    status, headers, body = raw_exchange(local_server, b"GET /health HTTP/2.0\r\nHost: x\r\n\r\n")
    assert status == 505
    envelope(status, headers, body, "http_version_not_supported")


def test_keep_alive_still_works_after_a_chunked_request(local_server: LocalServer) -> None:
    # two requests on one connection: the chunked body was read to its end, not left in the stream
    first = b"POST /nope HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
    second = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", local_server.port), timeout=30) as sock:
        sock.sendall(first + second)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.count(b"HTTP/1.1 ") == 2
    assert data.startswith(b"HTTP/1.1 404")
    assert b"HTTP/1.1 200 OK" in data and data.rstrip().endswith(b'{"status":"ok"}')


# --- defects found from outside -------------------------------------------------------------------------


def read_to_the_end(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


@pytest.mark.parametrize("after", [b"", b"\r\n"], ids=["bare", "blank-line"])
def test_an_http_0_9_request_is_505_with_a_status_line(after: bytes, local_server: LocalServer) -> None:
    # Given an HTTP/0.9 request line (no version, no headers), the client waiting with its side open
    with socket.create_connection(("127.0.0.1", local_server.port), timeout=10) as sock:
        sock.sendall(b"GET /health\r\n" + after)
        # When the server answers (and closes: a read to the end does not time out)
        data = read_to_the_end(sock)
    # Then it is an HTTP/1.1 status line and headers, and the envelope: 505, not the route's body
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("iso-8859-1").split("\r\n")
    assert lines[0].startswith("HTTP/1.1 505 "), data[:200]
    headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
    assert headers.get("connection") == "close"
    assert int(headers["content-length"]) == len(body)
    error = envelope(505, headers, body, "http_version_not_supported")
    assert "HTTP/1.1" in error["message"]
    assert b'"status"' not in body  # the health route's answer was not served


def test_a_client_that_hangs_up_before_its_answer_leaves_no_traceback(local_server: LocalServer) -> None:
    # Given the server's log so far
    seen = len(local_server.logs())
    aborted = 5
    # When clients send a request and hang up before the answer: some with a reset, some with a
    # plain close
    for i in range(2 * aborted):
        sock = socket.create_connection(("127.0.0.1", local_server.port), timeout=10)
        sock.sendall(f"GET /health?abort={i} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        if i % 2 == 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    # (every reset one was answered into a closed connection, and said so in the log)
    deadline = time.monotonic() + 30
    while local_server.logs()[seen:].count("hung up") < aborted and time.monotonic() < deadline:
        time.sleep(0.1)
    # Then the server still answers, and its log holds one line for each, and no traceback
    assert requests.get(f"{local_server.url}/health", timeout=10).status_code == 200
    log = local_server.logs()[seen:]
    assert "Traceback" not in log, log[-3000:]
    assert "Exception occurred during processing" not in log  # (socketserver's own report)
    assert log.count("hung up") >= aborted, log[-3000:]
