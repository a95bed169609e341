"""Batches, import and the SDK's command line over HTTP, against the local server.

The command line runs from the source tree (PYTHONPATH=clients/python/src), as `python -m`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx

from synapse_memory import Synapse
from tests.e2e.conftest import LocalServer

ROOT = Path(__file__).resolve().parents[2]
MEM0_FILE = ROOT / "tests" / "data" / "mem0_get_all.json"


def uid(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def synapse(server: LocalServer, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    done = synapse_bytes(server, token, *args)
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    )


def synapse_bytes(server: LocalServer, token: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`python -m synapse_memory.cli` from the source tree, its stdout as bytes."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "clients/python/src")}
    return subprocess.run(
        [sys.executable, "-m", "synapse_memory.cli", "--url", server.url, "--token", token, *args],
        capture_output=True,
        env=env,
        timeout=300,
        check=False,
    )


def memories_of(export_lines: str) -> list[tuple[Any, ...]]:
    # lines end at "\n" only (splitlines would also cut at a U+2028 inside a record's text)
    lines = [json.loads(line) for line in export_lines.split("\n") if line]
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


def test_the_export_file_round_trips_through_the_command_line_into_another_user(
    local_server: LocalServer, tmp_path: Path
) -> None:
    alice, bob = uid("exp"), uid("exp")
    alice_token, bob_token = local_server.make_jwt(alice), local_server.make_jwt(bob)
    with Synapse(local_server.url, token=alice_token, timeout=120) as mem:
        # Given alice's memories in Thai (one changed twice, one dated, one with U+2028 in it), a
        # conversation, a summary, a second mind, a key, a provider key and a webhook
        mem.store("fact", "home_city", "อยู่กรุงเทพ", tags=["บ้าน"], priority="high")
        mem.store("fact", "home_city", "ย้ายไปเชียงใหม่แล้ว")
        mem.store("fact", "home_city", "อยู่เชียงใหม่ ใกล้ดอยสุเทพ")
        mem.store("project", "trip", "ไปเที่ยวน่าน\u2028เดือนธันวาคม", valid_at="2026-12-20")
        mem.store("preference", "drink", "ชอบชาไทยหวานน้อย", expires_at="2030-01-01T00:00:00Z")
        session = uid("s")
        mem.ingest(session, [{"role": "user", "content": "ผมชื่อสมชาย ทำงานเป็นพยาบาลที่โรงพยาบาลนครพิงค์"}])
        mem.summarize(session)
        mind = mem.create_mind("งานอดิเรก")
        mem.store("skill", "guitar", "เล่นกีตาร์คลาสสิก", mind_id=mind.mind_id)
        mem.create_key("bot", ["memory:read"])
        mem.set_provider("gemini", "AIzaSyExampleExampleExample9xYz")
        mem.create_webhook("http://127.0.0.1:9/hook")
    # When alice exports through the command line
    exported = synapse_bytes(local_server, alice_token, "export")
    # Then stdout is the file the server wrote, byte for byte: the size and the records it announced
    stderr = exported.stderr.decode()
    assert exported.returncode == 0, stderr
    announced = re.search(r"ready, (\d+) records, (\d+) bytes", stderr)
    assert announced, stderr
    assert len(exported.stdout) == int(announced[2]) and f"export: {announced[2]} bytes written" in stderr
    lines = [json.loads(line) for line in exported.stdout.split(b"\n") if line]
    assert len(lines) == int(announced[1]) + 1 and lines[0]["user_id"] == alice
    kinds = [line.get("type") for line in lines[1:]]
    assert {"mind", "memory", "session", "message", "summary", "key", "provider", "webhook"} <= set(kinds)
    assert "AIzaSyExample" not in exported.stdout.decode() and "whsec_" not in exported.stdout.decode()
    home = next(line for line in lines if line.get("key") == "home_city")
    assert [v["content"] for v in home["history"]] == ["ย้ายไปเชียงใหม่แล้ว", "อยู่กรุงเทพ"]
    mine = tmp_path / "mine.jsonl"
    mine.write_bytes(exported.stdout)
    # And the server skips every record of it that is not a memory ("not a memory"), writing nothing
    others = [line for line in lines[1:] if line.get("type") != "memory"]
    with Synapse(local_server.url, token=bob_token, timeout=120) as bob_mem:
        answer = bob_mem.import_records("synapse", others)
        assert answer == {"imported": 0, "updated": 0, "skipped": len(others), "errors": []}
        assert bob_mem.list().memories == []
    # When bob imports alice's file and exports in turn
    imported = synapse(local_server, bob_token, "import", "--format", "synapse", str(mine))
    assert imported.returncode == 0, imported.stderr
    totals = json.loads(imported.stdout)
    assert totals == {"imported": kinds.count("memory"), "updated": 0, "skipped": len(others), "errors": []}
    again = synapse(local_server, bob_token, "export")
    assert again.returncode == 0, again.stderr
    # Then bob's export gives alice's memories (every mind's, in bob's default), history included
    assert memories_of(again.stdout) == memories_of(exported.stdout.decode())
    assert "ไปเที่ยวน่าน\u2028เดือนธันวาคม" in again.stdout
    # And importing the file again changes nothing
    twice = synapse(local_server, bob_token, "import", "--restart", str(mine))
    assert json.loads(twice.stdout)["imported"] == 0 and json.loads(twice.stdout)["updated"] == 0
