"""Batches, import and the SDK's command line over HTTP, against the local server.

The command line runs from the source tree (PYTHONPATH=clients/python/src), as `python -m`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.conftest import LocalServer

ROOT = Path(__file__).resolve().parents[2]
MEM0_FILE = ROOT / "tests" / "data" / "mem0_get_all.json"


def uid(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def synapse(server: LocalServer, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "clients/python/src")}
    return subprocess.run(
        [sys.executable, "-m", "synapse_memory.cli", "--url", server.url, "--token", token, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def memories_of(export_lines: str) -> list[tuple[Any, ...]]:
    lines = [json.loads(line) for line in export_lines.splitlines()]
    assert lines[0]["format"] == "synapse-export"
    fields = (
        "category",
        "key",
        "content",
        "tags",
        "priority",
        "confidence",
        "expires_at",
        "valid_at",
        "created_at",
    )
    return sorted(
        (*(json.dumps(r[f]) for f in fields), json.dumps([v["content"] for v in r["history"]]))
        for r in lines[1:]
        if r.get("type") == "memory"
    )


def test_batch_import_and_the_command_line_round_trip(local_server: LocalServer, tmp_path: Path) -> None:
    alice, bob = uid("port"), uid("port")
    token = local_server.make_jwt(alice)
    auth = {"authorization": f"Bearer {token}"}
    with httpx.Client(base_url=local_server.url, headers=auth, timeout=120) as http:
        # Given a batch of 100 items, one invalid, sent over HTTP
        items: list[dict[str, Any]] = [
            {"category": "fact", "key": f"k{i:03d}", "content": f"Fact {i}"} for i in range(99)
        ]
        items.insert(50, {"category": "fact", "key": "BAD KEY", "content": "x"})
        answer = http.post("/memory/batch", json={"memories": items})
        assert answer.status_code == 200, answer.text
        statuses = [r["status"] for r in answer.json()["results"]]
        assert statuses == [201] * 50 + [422] + [201] * 49
        # And an update of one of them in a second batch keeps its history
        http.post("/memory/batch", json={"memories": [{**items[0], "content": "Fact 0, revised"}]})
    # When the mem0 file is imported through the command line, 3 records a request
    done = synapse(local_server, token, "import", "--format", "mem0", "--batch", "3", str(MEM0_FILE))
    # Then every record is imported, with a progress bar on stderr
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"imported": 7, "updated": 0, "skipped": 0, "errors": []}
    assert "7/7" in done.stderr
    # When alice exports, and bob (who has nothing) imports her export, and exports in turn
    exported = synapse(local_server, token, "export")
    assert exported.returncode == 0, exported.stderr
    mine = tmp_path / "mine.jsonl"
    mine.write_text(exported.stdout, encoding="utf-8")
    bob_token = local_server.make_jwt(bob)
    imported = synapse(local_server, bob_token, "import", str(mine))
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["imported"] == 99 + 7
    again = synapse(local_server, bob_token, "export")
    # Then bob's export gives the same memories as alice's, history included
    assert memories_of(again.stdout) == memories_of(exported.stdout)
    # And importing the same file again changes nothing
    copy = tmp_path / "copy.jsonl"
    shutil.copy(mine, copy)
    twice = synapse(local_server, bob_token, "import", str(copy))
    assert json.loads(twice.stdout)["imported"] == 0 and json.loads(twice.stdout)["updated"] == 0
