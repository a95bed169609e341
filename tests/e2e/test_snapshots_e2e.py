"""Snapshots through the local server: a recall on a cold worker asks for the mind's snapshot, the
local EventBridge delivers SnapshotDue to the snapshot writer, which writes it to the embedded S3; the
next cold worker serves its recall from the snapshot and the change log's tail, deletions included."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import requests

from harness.gemini import GeminiDouble
from tests.e2e.conftest import ROOT, LocalServer

IDLE = 2.0  # seconds a worker stays idle before the server stops it: the next request starts a new one


@pytest.fixture(scope="module")
def gemini() -> Iterator[GeminiDouble]:
    double = GeminiDouble().start()
    yield double
    double.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, gemini: GeminiDouble) -> Iterator[LocalServer]:
    """The local server on template.yaml, workers stopped after IDLE seconds, Gemini the double (the
    recall embeds its query: the snapshot holds vectors)."""
    srv = LocalServer(
        tmp_path_factory.mktemp("snapshots") / "data",
        ROOT / "template.yaml",
        extra_env={
            "LOCAL_WORKER_IDLE_SECONDS": str(IDLE),
            "GEMINI_API_KEY": "fake-gemini-key",
            "GEMINI_BASE_URL": gemini.base_url,
        },
    )
    srv.start()
    yield srv
    srv.stop()


def _bucket(server: LocalServer) -> tuple[Any, str]:
    s3 = boto3.client(
        "s3",
        endpoint_url=server.info["aws_endpoint"],
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    return s3, server.info["resources"]["SnapshotBucket"]


def _log_records(server: LocalServer, message: str) -> list[dict[str, Any]]:
    found = []
    for line in server.logs().splitlines():
        if message in line and line.startswith("{"):
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
    return found


def _wait(what: str, check: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_cold_worker_serves_a_recall_from_the_snapshot_and_the_tail(server: LocalServer) -> None:
    user = f"snap-{uuid.uuid4().hex[:8]}"
    headers = server.headers(server.make_jwt(user))
    s3, bucket = _bucket(server)

    def remember(key: str, content: str) -> str:
        answer = requests.post(
            f"{server.url}/memory",
            headers=headers,
            json={"category": "fact", "key": key, "content": content},
            timeout=30,
        )
        assert answer.status_code == 201, answer.text
        return str(answer.json()["id"])

    def recall(query: str) -> list[dict[str, Any]]:
        answer = requests.post(
            f"{server.url}/memory/recall", headers=headers, json={"query": query}, timeout=60
        )
        assert answer.status_code == 200, answer.text
        return list(answer.json()["memories"])

    def snapshot_seq() -> int:
        listed = s3.list_objects_v2(Bucket=bucket).get("Contents", [])
        mine = [o["Key"] for o in listed]
        if not mine:
            return 0
        return max(int(s3.head_object(Bucket=bucket, Key=k)["Metadata"]["seq"]) for k in mine)

    # Given a user's memories, and a first recall (a cold worker: the mind read whole, a snapshot asked for)
    for i in range(12):
        remember(f"fact_{i}", f"fact number {i} about the garden and the river")
    secret = remember("secret", "the spare key is under the blue flowerpot")
    assert any(m["id"] == secret for m in recall("where is the spare key"))
    # When the snapshot writer has written the snapshot (SnapshotDue through the local EventBridge)
    written = _wait("the snapshot", snapshot_seq)
    (key,) = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert s3.head_object(Bucket=bucket, Key=key)["ServerSideEncryption"] == "aws:kms"
    # and the user writes one memory and deletes another after it
    moved = remember("home_city", "I moved to Chiang Mai last month")
    assert requests.delete(f"{server.url}/memory/{secret}", headers=headers, timeout=30).status_code == 204
    # and the recall worker is stopped (idle), so the next recall starts a new one
    before = len(_log_records(server, "corpus from snapshot"))
    time.sleep(IDLE * 2 + 1)
    # Then the next recall, on a new worker, is served from the snapshot and the tail since it: the new
    # memory found, the deleted one gone
    assert moved in [m["id"] for m in recall("Chiang Mai")]
    assert all(m["id"] != secret for m in recall("where is the spare key under the flowerpot"))
    loads = _log_records(server, "corpus from snapshot")[before:]
    assert loads, server.logs()[-3000:]
    assert loads[0]["at"] == written and loads[0]["tail"] == 2, loads[0]
