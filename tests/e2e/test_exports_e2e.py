"""Exports of any size over HTTP, against the local server: POST /me/exports, the writer run by the
bus, GET /me/exports/{id}, the file downloaded from its presigned URL (the local S3), its lines
imported into another user, and DELETE /me taking the file with it."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx

from tests.e2e.conftest import LocalServer


def uid(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def ready(http: httpx.Client, export_id: str, wait: float = 60.0) -> dict[str, Any]:
    """Poll the export until it is no longer pending."""
    deadline = time.monotonic() + wait
    while True:
        answer = http.get(f"/me/exports/{export_id}")
        assert answer.status_code == 200, answer.text
        job: dict[str, Any] = answer.json()
        if job["status"] != "pending" or time.monotonic() > deadline:
            return job
        time.sleep(0.3)


def export_file(http: httpx.Client) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    started = http.post("/me/exports")
    assert started.status_code == 202, started.text
    export_id = started.json()["export_id"]
    job = ready(http, export_id)
    assert job["status"] == "ready", job
    # the URL is S3's, presigned: no token goes with it
    download = httpx.get(job["url"], timeout=60)
    assert download.status_code == 200
    assert download.headers["content-type"].startswith("application/x-ndjson")
    assert len(download.content) == job["bytes"]
    lines = [json.loads(line) for line in download.text.splitlines()]
    assert len(lines) - 1 == job["records"]
    return export_id, job, lines


def test_an_export_file_round_trips_and_goes_with_the_user(local_server: LocalServer) -> None:
    alice, bob = uid("exp"), uid("exp")
    with (
        httpx.Client(
            base_url=local_server.url, headers=local_server.headers(local_server.make_jwt(alice)), timeout=60
        ) as http,
        httpx.Client(
            base_url=local_server.url, headers=local_server.headers(local_server.make_jwt(bob)), timeout=60
        ) as other,
    ):
        # Given alice's memories in Thai and English, one changed (history), in a batch
        items = [{"category": "fact", "key": f"k{i:03d}", "content": f"Fact {i}"} for i in range(150)]
        items.append({"category": "preference", "key": "food", "content": "ชอบกินต้มยำกุ้ง", "tags": ["อาหาร"]})
        for start in range(0, len(items), 100):
            assert (
                http.post("/memory/batch", json={"memories": items[start : start + 100]}).status_code == 200
            )
        assert http.post("/memory", json={**items[0], "content": "Fact 0, revised"}).status_code == 200
        # When she asks for an export and downloads it
        export_id, job, lines = export_file(http)
        # Then it is the contract's file, every memory in it with its history
        assert lines[0]["format"] == "synapse-export" and lines[0]["user_id"] == alice
        memories = [line for line in lines if line.get("type") == "memory"]
        assert len(memories) == 151
        revised = next(m for m in memories if m["key"] == "k000")
        assert revised["content"] == "Fact 0, revised" and [v["content"] for v in revised["history"]] == [
            "Fact 0"
        ]
        assert any(m["content"] == "ชอบกินต้มยำกุ้ง" and m["tags"] == ["อาหาร"] for m in memories)
        # And bob cannot see it
        assert other.get(f"/me/exports/{export_id}").status_code == 404
        # When bob imports her file's records and exports in turn
        records = lines[1:]
        for start in range(0, len(records), 100):
            answer = other.post(
                "/memory/import", json={"format": "synapse", "records": records[start : start + 100]}
            )
            assert answer.status_code == 200, answer.text
        _, _, his = export_file(other)

        # Then he has the same memories
        def same(m: dict[str, Any]) -> tuple[str, ...]:
            fields = ("category", "key", "content", "tags", "version", "created_at", "valid_at")
            return (*(json.dumps(m[f], ensure_ascii=False) for f in fields), json.dumps(m["history"]))

        assert sorted(same(m) for m in his if m.get("type") == "memory") == sorted(map(same, memories))
        # When alice deletes everything
        assert http.delete("/me").status_code == 200
        # Then her export is gone, and its URL no longer downloads anything (S3 answers a missing object
        # 403 to a signer that may not list the bucket)
        assert http.get(f"/me/exports/{export_id}").status_code == 404
        assert httpx.get(job["url"], timeout=60).status_code in (403, 404)
