"""The SDK's command line (clients/python/src/synapse_memory/cli.py) with a stand-in client: files
read in every shape, imports batched and resumed, chats replayed with their times, the export's lines;
`synapse export` over MockTransport (POST /me/exports, and GET /me/export on an older server).

The module is loaded from the source tree (the shared venv holds the SDK as built from main)."""

from __future__ import annotations

import importlib.util
import io
import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import httpx
import pytest

from synapse_memory import Synapse

ROOT = Path(__file__).resolve().parents[2]
MEM0_FILE = ROOT / "tests" / "data" / "mem0_get_all.json"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "synapse_cli_source", ROOT / "clients/python/src/synapse_memory/cli.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cli = _load()


class Boom(Exception):
    pass


class FakeClient:
    """Answers import_records and ingest as the server would count them; fails on request `fail_at`."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.imports: list[tuple[str, list[Any]]] = []
        self.ingests: list[tuple[str, list[dict[str, Any]], str | None]] = []
        self.fail_at = fail_at

    def import_records(self, fmt: str, records: list[Any]) -> dict[str, Any]:
        if self.fail_at is not None and len(self.imports) == self.fail_at:
            raise Boom("the network went away")
        self.imports.append((fmt, records))
        return {"imported": len(records), "updated": 0, "skipped": 0, "errors": []}

    def ingest(self, session: str, messages: list[dict[str, Any]], *, idempotency_key: str) -> Any:
        self.ingests.append((session, messages, idempotency_key))
        return SimpleNamespace(nuggets_created=1, nuggets_updated=0)


def test_records_are_read_from_mem0_json_an_export_and_json_lines(tmp_path: Path) -> None:
    # Given mem0's get_all output, a GET /me/export answer, and JSON Lines
    assert len(cli.read_records(MEM0_FILE)) == 7
    export = {"memories": [{"id": "m1", "key": "a"}], "history": {"m1": [{"version": 1}]}}
    (tmp_path / "export.json").write_text(json.dumps(export))
    assert cli.read_records(tmp_path / "export.json") == [
        {"type": "memory", "id": "m1", "key": "a", "history": [{"version": 1}]}
    ]
    (tmp_path / "x.jsonl").write_text('{"format": "synapse-export"}\n\n{"type": "memory", "key": "a"}\n')
    assert [r.get("type") for r in cli.read_records(tmp_path / "x.jsonl")] == [None, "memory"]


def test_an_import_is_batched_and_resumes_after_a_failure(tmp_path: Path) -> None:
    # Given a mem0 file of 7 records, imported 3 a request, the network failing on the third request
    path = tmp_path / "mem0.json"
    path.write_text(MEM0_FILE.read_text(encoding="utf-8"), encoding="utf-8")
    failing = FakeClient(fail_at=2)
    with pytest.raises(Boom):
        cli.run_import(failing, path, "mem0", batch=3, err=io.StringIO())
    assert [len(r) for _, r in failing.imports] == [3, 3]
    assert json.loads((tmp_path / "mem0.json.progress").read_text())["done"] == 6
    # When the same command runs again
    err = io.StringIO()
    again = FakeClient()
    totals = cli.run_import(again, path, "mem0", batch=3, err=err)
    # Then it sends only what was left, shows its progress, and forgets the progress when done
    assert [(fmt, [r["id"] for r in recs]) for fmt, recs in again.imports] == [
        ("mem0", ["4f5a6b7c-8d9e-4f0a-b1c2-d3e4f5a6b7c8"])
    ]
    assert totals["imported"] == 1
    assert "import [" in err.getvalue() and "7/7" in err.getvalue() and "(resumed)" in err.getvalue()
    assert not (tmp_path / "mem0.json.progress").exists()
    # And --restart sends everything again
    fresh = FakeClient()
    cli.run_import(fresh, path, "mem0", batch=100, restart=True, err=io.StringIO())
    assert [len(r) for _, r in fresh.imports] == [7]


def test_import_chat_sends_each_conversation_with_its_times(tmp_path: Path) -> None:
    # Given two conversations, one longer than one ingest request carries
    long = [
        {"role": "user", "content": f"message {i}", "created_at": f"2026-01-01T00:{i % 60:02d}:00Z"}
        for i in range(60)
    ]
    convs = [
        {"id": "trip/2026", "messages": [{"role": "user", "content": "Flying to Oslo", "created_at": "2026-02-01T09:00:00Z"}, {"role": "assistant", "content": " "}]},
        {"session_id": "long", "messages": long},
    ]  # fmt: skip
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(convs))
    client = FakeClient()
    # When they are replayed
    totals = cli.run_import_chat(client, path, err=io.StringIO())
    # Then each goes through ingest as its own session, blank messages left out, times kept, in chunks
    # whose Idempotency-Key makes a repeated run the same ingests
    assert [(s, len(m), k) for s, m, k in client.ingests] == [
        ("trip-2026", 1, "import-chat:trip-2026:0"),
        ("long", 50, "import-chat:long:0"),
        ("long", 10, "import-chat:long:50"),
    ]
    assert client.ingests[0][1][0]["created_at"] == "2026-02-01T09:00:00Z"
    assert totals == {"conversations": 2, "messages": 61, "nuggets_created": 3, "nuggets_updated": 0}


def test_the_export_is_json_lines_with_a_header_first() -> None:
    export = {
        "memories": [{"id": "m1", "key": "a"}],
        "history": {"m1": [{"version": 1}]},
        "minds": [{"mind_id": "m_x"}],
        "summaries": [{"session_id": "s"}],
        "sessions": [],
    }
    lines = list(cli.export_lines(export, "alice"))
    assert (
        lines[0]["format"] == "synapse-export" and lines[0]["version"] == 1 and lines[0]["user_id"] == "alice"
    )
    assert [line.get("type") for line in lines[1:]] == ["mind", "memory", "summary"]
    assert lines[2]["history"] == [{"version": 1}]


def test_no_token_is_a_usage_error() -> None:
    err = io.StringIO()
    assert cli.main(["--token", "", "export"], out=io.StringIO(), err=err) == 2
    assert "token" in err.getvalue()


def test_a_request_stays_under_the_body_limit() -> None:
    # Given records of 30 kB each
    records = [{"id": str(i), "memory": "x" * 30_000} for i in range(20)]
    # Then a request carries as many as fit in MAX_REQUEST_BYTES, and a record alone always goes
    assert len(cli._chunk(records, 0, 100)) == 6
    assert len(cli._chunk([{"memory": "y" * 300_000}], 0, 100)) == 1
    assert len(cli._chunk(records, 18, 100)) == 2


# --- synapse export: POST /me/exports, waited on, the file streamed to stdout ---------------------

API = "http://synapse.test"
FILE_URL = "http://127.0.0.1:5999/bucket/exports/alice/e1.jsonl?X-Amz-Signature=f00d"
EXPORT_LINES: list[dict[str, Any]] = [
    {"format": "synapse-export", "version": 1, "user_id": "alice", "created_at": "2026-12-02T10:00:00Z"},
    {"type": "mind", "mind_id": "m_aaaaaaaaaaaa", "name": "งาน", "identity": None},
    {"type": "memory", "category": "fact", "key": "home", "content": "อยู่เชียงใหม่\u2028ครับ", "history": []},
    {"type": "session", "mind_id": "default", "session_id": "s1", "msg_count": 1, "chunks": 0},
    {"type": "message", "mind_id": "default", "session_id": "s1", "seq": 1, "role": "user", "content": "สวัสดี"},
    {"type": "summary", "mind_id": "default", "session_id": "s1", "chunk_id": "c1", "summary": "ทักทาย"},
    {"type": "key", "key_id": "k1", "name": "bot", "hint": "gts_live_…abcd"},
    {"type": "memory", "category": "preference", "key": "food", "content": "ชอบข้าวซอย", "history": []},
]  # fmt: skip
EXPORT_FILE = b"".join(
    json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in EXPORT_LINES
)
ALICE_JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"  # {"sub": "alice"}


class ExportServer:
    """POST /me/exports (or 404, an older server), GET /me/exports/e1 answering `statuses` in turn,
    GET /me/export, and the file at FILE_URL; every request kept."""

    def __init__(self, *statuses: str, old: bool = False) -> None:
        self.statuses, self.old, self.looks = list(statuses) or ["ready"], old, 0
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        route = (request.method, request.url.path)
        if request.url.host == "127.0.0.1":
            return httpx.Response(200, content=EXPORT_FILE)
        if route == ("POST", "/me/exports") and not self.old:
            return httpx.Response(202, json={"export_id": "e1", "status": "pending"})
        if route == ("GET", "/me/exports/e1"):
            self.looks += 1
            status = self.statuses[min(self.looks, len(self.statuses)) - 1]
            ready = {"url": FILE_URL, "bytes": len(EXPORT_FILE), "records": 7} if status == "ready" else {}
            return httpx.Response(200, json={"status": status, **ready})
        if route == ("GET", "/me/export"):
            return httpx.Response(
                200, json={"memories": [], "identity": None, "summaries": [], "sessions": []}
            )
        return httpx.Response(404, json={"message": "Not Found"})  # API Gateway's own 404


@pytest.fixture
def export_server(monkeypatch: pytest.MonkeyPatch) -> Callable[..., ExportServer]:
    """The command line's client talks to an ExportServer; the waits between looks are not slept."""
    monkeypatch.setattr("synapse_memory._sync.time.sleep", lambda seconds: None)

    def make(*statuses: str, old: bool = False) -> ExportServer:
        server = ExportServer(*statuses, old=old)
        transport = httpx.MockTransport(server)
        monkeypatch.setattr(cli, "Synapse", lambda url, **kw: Synapse(url, transport=transport, **kw))
        return server

    return make


def run_cli(*args: str) -> tuple[int, bytes, str]:
    """`synapse --url API --token ALICE_JWT <args>`: its exit code, stdout's bytes and stderr."""
    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
    code = cli.main(["--url", API, "--token", ALICE_JWT, *args], out=out, err=err)
    out.flush()
    buffer = out.buffer
    assert isinstance(buffer, io.BytesIO)
    return code, buffer.getvalue(), err.getvalue()


def test_export_asks_for_the_file_waits_for_it_and_writes_it_to_stdout_byte_for_byte(
    export_server: Callable[..., ExportServer],
) -> None:
    # Given a server that writes the export while it is looked at twice
    server = export_server("pending", "pending", "ready")
    # When `synapse export` runs
    code, stdout, stderr = run_cli("export")
    # Then stdout is the file exactly as stored, and stderr tells the wait, once a state
    assert code == 0 and stdout == EXPORT_FILE
    assert stderr.count("export: pending") == 1 and "export: ready, 7 records" in stderr
    assert f"export: {len(EXPORT_FILE)} bytes written" in stderr
    # And the API got POST /me/exports and its looks with the token, the storage neither token nor mind
    calls = [(r.method, r.url.host, r.url.path) for r in server.requests]
    assert calls[0] == ("POST", "synapse.test", "/me/exports") and calls[-1][1] == "127.0.0.1"
    assert "GET /me/export" not in stderr and ("GET", "synapse.test", "/me/export") not in calls
    assert "authorization" not in server.requests[-1].headers
    assert all(r.headers["authorization"] == f"Bearer {ALICE_JWT}" for r in server.requests[:-1])


def test_export_on_an_older_server_falls_back_to_get_me_export(
    export_server: Callable[..., ExportServer],
) -> None:
    # Given a server that answers 404 for POST /me/exports (it has no such route)
    server = export_server(old=True)
    # When `synapse export` runs
    code, stdout, stderr = run_cli("export")
    # Then it asks GET /me/export and writes its answer as the export's JSON Lines
    assert code == 0, stderr
    assert [(r.method, r.url.path) for r in server.requests] == [
        ("POST", "/me/exports"),
        ("GET", "/me/export"),
    ]
    lines = [json.loads(line) for line in stdout.decode().splitlines()]
    assert lines[0]["format"] == "synapse-export" and lines[0]["user_id"] == "alice" and len(lines) == 1
    assert "older" in stderr


def test_a_failed_or_unfinished_export_is_exit_1_with_the_reason(
    export_server: Callable[..., ExportServer],
) -> None:
    export_server("pending", "failed")
    code, stdout, stderr = run_cli("export")
    assert (code, stdout) == (1, b"") and "export_failed" in stderr
    export_server("pending")
    code, stdout, stderr = run_cli("export", "--timeout", "0")
    assert (code, stdout) == (1, b"") and "export_timeout" in stderr


def test_an_export_file_imports_its_memory_lines_only_and_the_rest_count_as_skipped(tmp_path: Path) -> None:
    # Given an export file: a header, two memories (one with U+2028 in its text) and five other records
    path = tmp_path / "mine.jsonl"
    path.write_bytes(EXPORT_FILE)
    client = FakeClient()
    # When it is imported
    totals = cli.run_import(client, path, "synapse", err=io.StringIO())
    # Then only the memories are sent, whole; the other records count as skipped, the header as nothing
    [(fmt, sent)] = client.imports
    assert fmt == "synapse" and [r["key"] for r in sent] == ["home", "food"]
    assert sent[0]["content"] == "อยู่เชียงใหม่\u2028ครับ"
    assert totals == {"imported": 2, "updated": 0, "skipped": 5, "errors": []}


def test_an_import_error_names_the_records_place_in_the_file(tmp_path: Path) -> None:
    class Refusing(FakeClient):
        def import_records(self, fmt: str, records: list[Any]) -> dict[str, Any]:
            self.imports.append((fmt, records))
            return {
                "imported": 0,
                "updated": 0,
                "skipped": 0,
                "errors": [{"index": len(records) - 1, "error": {}}],
            }

    path = tmp_path / "mine.jsonl"
    path.write_bytes(EXPORT_FILE)
    totals = cli.run_import(Refusing(), path, "synapse", batch=1, err=io.StringIO())
    # the second memory is the file's eighth line (index 7)
    assert [e["index"] for e in totals["errors"]] == [2, 7]
