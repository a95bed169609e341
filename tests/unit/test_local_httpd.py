"""The local server's body reading: chunked bodies (limits included) and Content-Length, unit by unit."""

from __future__ import annotations

import http.client
import io

import pytest

from local import apigw
from local.httpd import BadBody, LocalRequestHandler, status_code


def _handler(head: bytes, body: bytes) -> LocalRequestHandler:
    handler = object.__new__(LocalRequestHandler)  # no socket: only what read_body uses
    handler.headers = http.client.parse_headers(io.BytesIO(head + b"\r\n"))
    handler.rfile = io.BytesIO(body)
    return handler


def _chunked(*parts: bytes, trailer: bytes = b"") -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n" + trailer + b"\r\n"


def test_chunks_are_joined_with_extensions_and_trailers_ignored() -> None:
    body = b"5;name=value\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT"
    handler = _handler(b"Transfer-Encoding: chunked\r\n", body)
    assert handler.read_body() == b"hello world"
    assert handler.rfile.read() == b"NEXT"  # the next request on the connection is left intact


def test_transfer_encoding_wins_over_a_content_length() -> None:
    handler = _handler(b"Content-Length: 2\r\nTransfer-Encoding: Chunked\r\n", _chunked(b"abc"))
    assert handler.read_body() == b"abc"


def test_a_chunked_body_over_10_mb_is_413_before_it_is_all_read() -> None:
    part = b"x" * (1024 * 1024)
    handler = _handler(b"Transfer-Encoding: chunked\r\n", _chunked(*[part] * 11))
    with pytest.raises(BadBody) as caught:
        handler.read_body()
    assert caught.value.response.status == 413
    assert b"payload_too_large" in caught.value.response.body
    # exactly 10 MB is fine
    handler = _handler(b"Transfer-Encoding: chunked\r\n", _chunked(*[part] * 10))
    assert len(handler.read_body()) == apigw.MAX_BODY


@pytest.mark.parametrize(
    ("head", "body"),
    [
        (b"Transfer-Encoding: chunked\r\n", b"zz\r\nab\r\n0\r\n\r\n"),  # not hex
        (b"Transfer-Encoding: chunked\r\n", b"0x2\r\nab\r\n0\r\n\r\n"),  # a prefix int() would take
        (b"Transfer-Encoding: chunked\r\n", b"1_0\r\nab\r\n0\r\n\r\n"),  # so are underscores
        (b"Transfer-Encoding: chunked\r\n", b"5\r\nab"),  # cut short
        (b"Transfer-Encoding: chunked\r\n", b"2\r\nabcd\r\n0\r\n\r\n"),  # longer than its size
        (b"Transfer-Encoding: chunked\r\n", b"2\r\nab\r\n"),  # no last chunk
        (b"Transfer-Encoding: gzip, chunked\r\n", _chunked(b"ab")),  # a coding it does not undo
        (b"Content-Length: -1\r\n", b""),
        (b"Content-Length: 1e3\r\n", b""),
        (b"Content-Length: 3\r\nContent-Length: 4\r\n", b"abcd"),
        (b"Content-Length: 10\r\n", b"short"),
    ],
)
def test_a_body_that_cannot_be_read_is_400(head: bytes, body: bytes) -> None:
    with pytest.raises(BadBody) as caught:
        _handler(head, body).read_body()
    assert caught.value.response.status == 400
    assert b'"bad_request"' in caught.value.response.body


def test_content_length_bodies_and_no_body() -> None:
    assert _handler(b"Content-Length: 3\r\n", b"abcdef").read_body() == b"abc"
    assert _handler(b"Content-Length: 3, 3\r\n", b"abc").read_body() == b"abc"
    assert _handler(b"", b"ignored").read_body() == b""
    with pytest.raises(BadBody) as caught:
        _handler(b"Content-Length: %d\r\n" % (apigw.MAX_BODY + 1), b"").read_body()
    assert caught.value.response.status == 413


def test_status_codes_are_the_status_names_in_snake_case() -> None:
    assert status_code(431) == "request_header_fields_too_large"
    assert status_code(414) == "uri_too_long"
    assert status_code(400) == "bad_request"
    assert status_code(505) == "http_version_not_supported"
    assert status_code(599) == "http_error"
