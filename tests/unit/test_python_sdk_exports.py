"""The Python SDK's exports of any size without a server (httpx.MockTransport): `create_export`,
`get_export`, `wait_export` polling until ready (or failed, or out of time), and the file streamed
from its presigned URL by `download_export` / `iter_export`, which never carries the token, the mind
or any of the client's headers to the storage."""

from __future__ import annotations

import asyncio
import io
import json
import traceback
from typing import Any

import httpx
import pytest

from synapse_memory import (
    AsyncSynapse,
    ExportDownloadError,
    ExportFailed,
    ExportJob,
    ExportTimeout,
    NotFound,
    Synapse,
    SynapseConnectionError,
    SynapseError,
    SynapseResponseError,
)

API = "http://synapse.test"
TOKEN = "gts_live_TOPSECRETtokenTOPSECRETtokenTOPSECRET42"
EXPORT_ID = "0123456789abcdef0123456789abcdef"
SIGNATURE = "f00dfeedSIGNATUREf00dfeed"
FILE_URL = (
    "https://bucket.s3.example.com/exports/alice/0123456789abcdef0123456789abcdef.jsonl"
    f"?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=3600&X-Amz-Signature={SIGNATURE}"
)
LINES: list[dict[str, Any]] = [
    {"format": "synapse-export", "version": 1, "user_id": "alice", "created_at": "2026-12-02T10:00:00Z"},
    {"type": "mind", "mind_id": "m_aaaaaaaaaaaa", "name": "งาน", "identity": "ชื่อ สมชาย"},
    # U+2028 and U+0085 are left unescaped by JSON: a reader that splits at them breaks the record
    {"type": "memory", "category": "fact", "key": "home", "content": "อยู่เชียงใหม่\u2028line\x85two", "history": []},
    {"type": "message", "session_id": "s1", "seq": 1, "role": "user", "content": "สวัสดีครับ"},
]  # fmt: skip
FILE = b"".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in LINES)


def job(status: str, **fields: Any) -> dict[str, Any]:
    return {"status": status, **fields}


READY = job("ready", url=FILE_URL, bytes=len(FILE), records=len(LINES) - 1, expires_at="2026-12-02T11:00:00Z")


class Server:
    """The API and the storage behind one MockTransport: POST /me/exports, GET /me/exports/{id}
    answering `statuses` in turn (the last repeats), and the file at FILE_URL; every request kept."""

    def __init__(self, *statuses: dict[str, Any], file: httpx.Response | None = None) -> None:
        self.statuses = list(statuses) or [READY]
        self.file = file
        self.requests: list[httpx.Request] = []
        self.looks = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if request.url.host == "bucket.s3.example.com":
            return self.file or httpx.Response(200, content=FILE)
        if (request.method, request.url.path) == ("POST", "/me/exports"):
            return httpx.Response(202, json={"export_id": EXPORT_ID, "status": "pending"})
        if (request.method, request.url.path) == ("GET", f"/me/exports/{EXPORT_ID}"):
            self.looks += 1
            return httpx.Response(200, json=self.statuses[min(self.looks, len(self.statuses)) - 1])
        return httpx.Response(404, json={"error": {"code": "not_found", "message": "No route."}})

    def to_storage(self) -> list[httpx.Request]:
        return [r for r in self.requests if r.url.host == "bucket.s3.example.com"]

    def to_api(self) -> list[httpx.Request]:
        return [r for r in self.requests if r.url.host == "synapse.test"]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits between looks, recorded instead of slept; the monotonic clock moves by them."""
    waited: list[float] = []
    now = [1000.0]

    def sleep(seconds: float) -> None:
        waited.append(seconds)
        now[0] += seconds

    async def async_sleep(seconds: float) -> None:
        sleep(seconds)

    monkeypatch.setattr("synapse_memory._sync.time.sleep", sleep)
    monkeypatch.setattr("synapse_memory._sync.time.monotonic", lambda: now[0])
    monkeypatch.setattr("synapse_memory._async.asyncio.sleep", async_sleep)
    return waited


def client(server: Server, **kw: Any) -> Synapse:
    return Synapse(API, token=TOKEN, transport=httpx.MockTransport(server), **kw)


def async_client(server: Server, **kw: Any) -> AsyncSynapse:
    return AsyncSynapse(API, token=TOKEN, transport=httpx.MockTransport(server), **kw)


def test_an_export_is_asked_for_waited_on_and_downloaded_byte_for_byte(clock: list[float]) -> None:
    # Given a server that writes the export while it is looked at twice
    server = Server(job("pending"), job("pending"), READY)
    seen: list[str] = []
    out = io.BytesIO()
    # When the user asks for it, waits for it and downloads it
    with client(server) as mem:
        started = mem.create_export()
        ready = mem.wait_export(started.export_id, progress=lambda j: seen.append(j.status))
        written = mem.download_export(ready, out)
    # Then the file is the storage's bytes exactly, after waits that start at half a second and double
    assert (started.export_id, started.status) == (EXPORT_ID, "pending")
    assert out.getvalue() == FILE and written == len(FILE) == ready.bytes
    assert (ready.records, ready.expires_at and ready.expires_at.isoformat()) == (
        3,
        "2026-12-02T11:00:00+00:00",
    )
    assert seen == ["pending", "pending", "ready"] and clock == [0.5, 1.0]
    # And the API calls are POST /me/exports (no body) then GET /me/exports/{id}, with the token
    calls = [(r.method, r.url.path, r.content) for r in server.to_api()]
    assert calls == [("POST", "/me/exports", b"")] + [("GET", f"/me/exports/{EXPORT_ID}", b"")] * 3
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in server.to_api())


def test_the_download_never_carries_the_token_the_mind_or_the_clients_headers(clock: list[float]) -> None:
    # Given a client with a mind and headers of its own, and one on an http_client with default auth
    server = Server()
    with client(server, mind_id="m_aaaaaaaaaaaa", headers={"X-Team": "blue"}) as mem:
        mem.download_export(mem.wait_export(EXPORT_ID), io.BytesIO())
        assert [r.get("type") for r in mem.iter_export(FILE_URL)][1:] == ["mind", "memory", "message"]
    own = httpx.Client(
        transport=httpx.MockTransport(server),
        headers={"Authorization": f"Bearer {TOKEN}", "X-Mind-Id": "m_bbbbbbbbbbbb"},
        auth=("alice", "password"),
        cookies={"session": "TOPSECRET"},
    )
    with Synapse(API, token=TOKEN, http_client=own) as mem:
        mem.download_export(FILE_URL, io.BytesIO())
    own.close()
    # Then the storage got three GETs of the presigned URL as given, and none holds anything of the API's
    storage = server.to_storage()
    assert [(r.method, str(r.url)) for r in storage] == [("GET", FILE_URL)] * 3
    for request in storage:
        names = {name.lower() for name in request.headers}
        assert not names & {"authorization", "x-mind-id", "x-team", "cookie"}, request.headers
        assert TOKEN not in str(request.headers) and "TOPSECRET" not in str(request.headers)
    # While the API calls made by the same client do carry the token and the mind
    assert server.to_api()[0].headers["authorization"] == f"Bearer {TOKEN}"


def test_a_failed_export_raises_export_failed_and_a_slow_one_export_timeout(clock: list[float]) -> None:
    with client(Server(job("pending"), job("failed"))) as mem, pytest.raises(ExportFailed) as failed:
        mem.wait_export(EXPORT_ID)
    assert failed.value.code == "export_failed" and isinstance(failed.value, SynapseError)
    assert failed.value.path == f"/me/exports/{EXPORT_ID}"
    # Given an export still pending after 10 s of waiting, looked at every 2 s at most
    with client(Server(job("pending"))) as mem, pytest.raises(ExportTimeout) as slow:
        mem.wait_export(EXPORT_ID, timeout=10, poll=2)
    assert slow.value.code == "export_timeout" and "pending" in str(slow.value)
    assert clock[1:] == [0.5, 1.0, 2.0, 2.0, 2.0, 2.0, 0.5] and sum(clock[1:]) == 10
    # And an unknown export is the server's NotFound; nonsense waits are refused before any request
    with client(Server()) as mem:
        with pytest.raises(NotFound):
            mem.get_export("nope")
        with pytest.raises(ValueError, match="poll"):
            mem.wait_export(EXPORT_ID, poll=0)


def test_a_job_that_is_not_ready_or_a_url_that_is_not_http_is_refused() -> None:
    server = Server()
    with client(server) as mem:
        for source in (ExportJob(status="pending"), "file:///etc/passwd", "s3://bucket/key"):
            with pytest.raises(ValueError):
                mem.download_export(source, io.BytesIO())
    assert server.requests == []


def test_a_storage_error_is_an_export_download_error_that_quotes_neither_url_nor_signature() -> None:
    # Given the storage refusing a URL past its hour, with S3's body quoting the signature sent
    expired = httpx.Response(
        403,
        text=(
            "<?xml version='1.0'?><Error><Code>AccessDenied</Code><Message>Request has expired</Message>"
            f"<SignatureProvided>{SIGNATURE}</SignatureProvided></Error>"
        ),
    )
    with client(Server(file=expired)) as mem, pytest.raises(ExportDownloadError) as refused:
        mem.download_export(FILE_URL, io.BytesIO())
    err = refused.value
    # Then it says what happened and what to do, and nothing of the URL's query or the body's signature
    assert (err.status, err.code) == (403, "download_failed")
    assert "AccessDenied" in str(err) and "get_export" in str(err)
    shown = [str(err), repr(err), "".join(traceback.format_exception(err)), repr(vars(err))]
    assert not any(SIGNATURE in s or "X-Amz" in s or "alice" in s for s in shown), shown
    # And a file gone past its day is a 404 of the same kind
    with client(Server(file=httpx.Response(404))) as mem, pytest.raises(ExportDownloadError) as gone:
        list(mem.iter_export(FILE_URL))
    assert gone.value.status == 404


def test_a_download_shorter_than_the_jobs_bytes_or_a_broken_one_is_an_error() -> None:
    with client(Server(file=httpx.Response(200, content=FILE[:10]))) as mem:
        with pytest.raises(ExportDownloadError, match=f"10 bytes of {len(FILE)}"):
            mem.download_export(ExportJob.model_validate(READY), io.BytesIO())
        assert mem.download_export(FILE_URL, io.BytesIO()) == 10  # a bare URL has no size to hold to

    def broken(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadError(f"connection reset while reading {request.url}")

    with (
        Synapse(API, token=TOKEN, transport=httpx.MockTransport(broken)) as mem,
        pytest.raises(SynapseConnectionError) as caught,
    ):
        mem.download_export(FILE_URL, io.BytesIO())
    assert "bucket.s3.example.com" in str(caught.value) and SIGNATURE not in str(caught.value)


def test_iter_export_parses_each_line_across_chunks_split_anywhere() -> None:
    # Given the file sent in chunks of 7 bytes (Thai characters are 3 bytes: chunks cut through them)
    chunks = [FILE[i : i + 7] for i in range(0, len(FILE), 7)]
    server = Server(file=httpx.Response(200, content=iter(chunks)))
    with client(server) as mem:
        records = list(mem.iter_export(FILE_URL))
    # Then every record comes whole, U+2028 and U+0085 inside its text included
    assert records == LINES
    bad = httpx.Response(200, content=FILE + b"\n\nnot json\n")
    with client(Server(file=bad)) as mem, pytest.raises(SynapseResponseError, match="Line 7"):
        list(mem.iter_export(FILE_URL))


def test_the_job_keeps_its_url_out_of_reprs() -> None:
    ready = ExportJob.model_validate(READY)
    assert ready.url == FILE_URL
    assert SIGNATURE not in repr(ready) and SIGNATURE not in str(ready) and "ready" in repr(ready)


def test_the_async_client_waits_and_downloads_the_same_way(clock: list[float]) -> None:
    server = Server(job("pending"), READY)

    async def main() -> tuple[bytes, list[dict[str, Any]]]:
        out = io.BytesIO()
        async with async_client(server, mind_id="m_aaaaaaaaaaaa") as mem:
            started = await mem.create_export()
            ready = await mem.wait_export(started.export_id)
            await mem.download_export(ready, out)
            records = [r async for r in mem.iter_export(ready)]
        async with async_client(Server(job("failed"))) as other:
            with pytest.raises(ExportFailed):
                await other.wait_export(EXPORT_ID)
        return out.getvalue(), records

    data, records = asyncio.run(main())
    assert data == FILE and records == LINES and clock == [0.5]
    assert all("authorization" not in r.headers and "x-mind-id" not in r.headers for r in server.to_storage())
    assert len(server.to_storage()) == 2


def test_the_async_wait_times_out_too(clock: list[float]) -> None:
    async def main() -> None:
        async with async_client(Server(job("pending"))) as mem:
            await mem.wait_export(EXPORT_ID, timeout=3, poll=1)

    with pytest.raises(ExportTimeout):
        asyncio.run(main())
    assert clock == [0.5, 1.0, 1.0, 0.5]
