"""The SDK's command line (clients/python/src/synapse_memory/cli.py) with a stand-in client: files
read in every shape, imports batched and resumed, chats replayed with their times, the export's lines.

The module is loaded from the source tree (the shared venv holds the SDK as built from main)."""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

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
