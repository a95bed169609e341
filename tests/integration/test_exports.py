"""Exports of any size (API.md "Export for any size"), through the handlers: POST /me/exports records
the export and asks for it on the bus, the writer streams the user's partition into a JSON Lines file
in the bucket, GET /me/exports/{id} answers its state and a presigned URL; the file goes after a day
and with DELETE /me; another user never reaches it."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlparse

import boto3
import pytest

from harness.gemini import GeminiDouble
from harness.lambdas import ALICE, SNAPSHOT_BUCKET, LambdaContext, agent, load_function, sample_event, user
from synapse.core.errors import UpstreamUnavailable
from synapse.core.models.base import utcnow
from synapse.services.account import exports
from synapse.store import keys as keymod
from synapse.store.account import exports as store
from synapse.store.account import users, webhooks
from synapse.store.account.webhooks import WebhookRecord
from tests.conftest import Call
from tests.integration.test_providers_and_privacy import GEMINI_KEY, seed

BOB = user("bob")


@pytest.fixture
def requested(
    aws: Any, gemini_double: GeminiDouble, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[str, str]]:
    """The ExportRequested events POST /me/exports sends (the writer is run by the test); Gemini is
    the double."""
    sent: list[tuple[str, str]] = []
    monkeypatch.setattr(exports.events, "publish_export_requested", lambda u, e: sent.append((u, e)))
    return sent


def start(call: Call, who: dict[str, str] = ALICE) -> dict[str, Any]:
    return call("me_exports_create", "POST", "/me/exports", who=who)


def state(call: Call, export_id: str, who: dict[str, str] = ALICE) -> dict[str, Any]:
    return call(
        "me_exports_get",
        "GET",
        f"/me/exports/{export_id}",
        route="/me/exports/{exportId}",
        path_params={"exportId": export_id},
        who=who,
    )


def run_writer(user_id: str, export_id: str) -> dict[str, Any]:
    event = sample_event("export_writer")
    event["detail"] = {"userId": user_id, "exportId": export_id}
    answer: dict[str, Any] = load_function("export_writer").handler(event, LambdaContext())
    return answer


def file_lines(user_id: str, export_id: str) -> list[dict[str, Any]]:
    body = boto3.client("s3").get_object(Bucket=SNAPSHOT_BUCKET, Key=keymod.export_key(user_id, export_id))[
        "Body"
    ]
    text = body.read().decode()
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def objects(prefix: str = "exports/") -> list[str]:
    listed = boto3.client("s3").list_objects_v2(Bucket=SNAPSHOT_BUCKET, Prefix=prefix)
    return [o["Key"] for o in listed.get("Contents", [])]


def exported(
    call: Call, who: dict[str, str], user_id: str, sent: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    """POST, the writer, GET: the file's lines."""
    answer = start(call, who)
    assert answer["statusCode"] == 202, answer
    export_id = answer["json"]["export_id"]
    assert sent[-1] == (user_id, export_id)
    assert run_writer(user_id, export_id) == {"outcome": "ready"}
    return file_lines(user_id, export_id)


def test_an_export_is_written_in_the_background_and_downloaded_by_a_presigned_url(
    call: Call, requested: list[tuple[str, str]]
) -> None:
    # Given alice with memories (one changed twice), a conversation, a summary, keys and a provider key
    seed(call, ALICE)
    for content in ("Lives in Lyon", "Lives in Chiang Mai", "อาศัยอยู่ที่เชียงใหม่"):
        assert call(
            "memory_create",
            "POST",
            "/memory",
            body={"category": "fact", "key": "city", "content": content},
            who=ALICE,
        )["statusCode"] in (200, 201)
    secret = call("keys_create", "POST", "/keys", body={"name": "bot", "scopes": ["memory:read"]}, who=ALICE)[
        "json"
    ]["key"]
    # When she asks for an export
    answer = start(call)
    # Then it is accepted and pending, and the writer was asked for it
    assert answer["statusCode"] == 202, answer
    assert answer["json"]["status"] == "pending" and set(answer["json"]) == {"export_id", "status"}
    export_id = answer["json"]["export_id"]
    assert requested == [("alice", export_id)]
    assert state(call, export_id)["json"] == {"status": "pending"}
    # When the writer runs
    assert run_writer("alice", export_id) == {"outcome": "ready"}
    # Then the export is ready with a URL signed for an hour, its size and its records
    ready = state(call, export_id)
    assert ready["statusCode"] == 200, ready
    job = ready["json"]
    assert set(job) == {"status", "url", "bytes", "records", "expires_at"} and job["status"] == "ready"
    url = urlparse(job["url"])
    assert url.path.endswith(keymod.export_key("alice", export_id))
    query = parse_qs(url.query)
    assert query["X-Amz-Expires"] == ["3600"] and "X-Amz-Signature" in query
    assert job["expires_at"].endswith("Z")
    lines = file_lines("alice", export_id)
    assert job["records"] == len(lines) - 1
    body = boto3.client("s3").get_object(Bucket=SNAPSHOT_BUCKET, Key=keymod.export_key("alice", export_id))
    assert job["bytes"] == body["ContentLength"]
    # And the file is the contract's: the header, then typed records
    header = lines[0]
    assert header["format"] == "synapse-export" and header["version"] == 1 and header["user_id"] == "alice"
    types = [line["type"] for line in lines[1:]]
    assert {"mind", "memory", "session", "message", "summary", "key", "provider"} <= set(types)
    memories = {m["key"]: m for m in lines[1:] if m["type"] == "memory"}
    city = memories["city"]
    assert city["content"] == "อาศัยอยู่ที่เชียงใหม่" and city["version"] == 3
    assert [v["content"] for v in city["history"]] == ["Lives in Chiang Mai", "Lives in Lyon"]  # newest first
    mind = next(line for line in lines if line.get("type") == "mind")
    assert mind["mind_id"] == "default"
    assert mind["identity"] == call("me_export", "GET", "/me/export", who=ALICE)["json"]["identity"]
    message = next(line for line in lines if line.get("type") == "message")
    assert message["session_id"] == "s1" and message["content"].startswith("My name")
    # And no vector and no secret is in it: keys and providers as hints
    text = "\n".join(json.dumps(line, ensure_ascii=False) for line in lines)
    assert secret not in text and GEMINI_KEY not in text and '"emb"' not in text and "ciphertext" not in text
    provider = next(line for line in lines if line.get("type") == "provider")
    assert provider["hint"] == "AIza…9xYz"


def test_the_file_holds_every_mind_and_webhooks_as_hints(
    call: Call, requested: list[tuple[str, str]]
) -> None:
    # Given alice with a second mind holding a memory, and a webhook
    work = call("minds_create", "POST", "/minds", body={"name": "Work"}, who=ALICE)["json"]["mind_id"]
    body = {"category": "project", "key": "launch", "content": "Launch on Friday"}
    assert (
        call("memory_create", "POST", "/memory", body=body, who=ALICE, headers={"x-mind-id": work})[
            "statusCode"
        ]
        == 201
    )
    webhooks.put(
        WebhookRecord("w1", "alice", "https://example.com/hook", (), None, b"secret-ciphertext", utcnow())
    )
    # When she exports
    lines = exported(call, ALICE, "alice", requested)
    # Then both minds are there (the default first), the memory in its mind, and the webhook without
    # its secret
    minds = [line for line in lines if line.get("type") == "mind"]
    assert [m["mind_id"] for m in minds] == ["default", work] and minds[1]["name"] == "Work"
    (memory,) = [line for line in lines if line.get("type") == "memory"]
    assert memory["mind_id"] == work and memory["key"] == "launch"
    (hook,) = [line for line in lines if line.get("type") == "webhook"]
    assert hook["url"] == "https://example.com/hook" and "secret" not in json.dumps(hook)


def test_an_exported_file_imported_into_an_empty_user_exports_the_same_memories(
    call: Call, requested: list[tuple[str, str]]
) -> None:
    # Given alice's memories, one with history, exported to a file
    for content in ("Drinks coffee", "Drinks green tea"):
        call(
            "memory_create",
            "POST",
            "/memory",
            body={"category": "preference", "key": "drink", "content": content},
            who=ALICE,
        )
    call(
        "memory_create",
        "POST",
        "/memory",
        body={"category": "fact", "key": "pet", "content": "แมวชื่อมิโซะ", "tags": ["pets"]},
        who=ALICE,
    )
    first = [line for line in exported(call, ALICE, "alice", requested) if line.get("type") == "memory"]
    # When bob (empty) imports the file's records, the non-memory ones among them, and exports
    records = exported(call, ALICE, "alice", requested)[1:]
    answer = call(
        "memory_import", "POST", "/memory/import", body={"format": "synapse", "records": records}, who=BOB
    )
    assert answer["statusCode"] == 200, answer
    assert answer["json"]["imported"] == len(first)
    again = [line for line in exported(call, BOB, "bob", requested) if line.get("type") == "memory"]

    # Then he has the same memories, their versions and history
    def same(m: dict[str, Any]) -> tuple[Any, ...]:
        history = [(v["version"], v["content"]) for v in m["history"]]
        return m["key"], m["category"], m["content"], m["tags"], m["version"], m["created_at"], history

    assert sorted(map(same, again)) == sorted(map(same, first))


def test_asking_again_while_one_is_written_answers_that_one(
    call: Call, requested: list[tuple[str, str]]
) -> None:
    # Given an export under way
    first = start(call)["json"]["export_id"]
    # When alice asks again
    second = start(call)
    # Then she gets the same export, and the writer was asked once
    assert second["statusCode"] == 202 and second["json"]["export_id"] == first
    assert len(requested) == 1
    # And once it is written, a new request makes a new export
    run_writer("alice", first)
    assert start(call)["json"]["export_id"] != first


def test_an_export_is_its_owners_only(call: Call, requested: list[tuple[str, str]]) -> None:
    # Given alice's written export
    export_id = start(call)["json"]["export_id"]
    run_writer("alice", export_id)
    # Then bob, an agent, and a made-up or malformed id get nothing of it
    assert state(call, export_id, BOB)["statusCode"] == 404
    assert state(call, export_id, agent())["statusCode"] == 403
    assert start(call, agent())["statusCode"] == 403
    for other in ("0" * 32, "not-an-id", "../" + export_id):
        answer = state(call, other)
        assert answer["statusCode"] == 404 and answer["json"]["error"]["code"] == "not_found", other


def test_after_24_hours_an_export_is_not_found(
    call: Call, requested: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a written export
    export_id = start(call)["json"]["export_id"]
    run_writer("alice", export_id)
    later = utcnow() + timedelta(hours=23, minutes=30)
    # When asked for 23.5 hours later, its URL is good until the file goes, not an hour
    monkeypatch.setattr(exports, "utcnow", lambda: later)
    job = state(call, export_id)["json"]
    assert job["status"] == "ready"
    assert 29 * 60 < int(parse_qs(urlparse(job["url"]).query)["X-Amz-Expires"][0]) <= 30 * 60
    # When asked for after 24 hours (DynamoDB's TTL not yet run)
    monkeypatch.setattr(exports, "utcnow", lambda: later + timedelta(hours=1))
    monkeypatch.setattr(store, "utcnow", lambda: later + timedelta(hours=1))
    # Then it is not found
    assert state(call, export_id)["statusCode"] == 404


def test_a_writer_cut_off_shows_failed_and_a_new_export_can_be_asked_for(
    call: Call, requested: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an export whose writer never finished (Lambda's timeout stops it without a word)
    export_id = start(call)["json"]["export_id"]
    later = utcnow() + exports.WRITER_LIMIT + timedelta(seconds=1)
    monkeypatch.setattr(exports, "utcnow", lambda: later)
    # Then it is failed, and asking again makes a new export
    assert state(call, export_id)["json"] == {"status": "failed"}
    assert start(call)["json"]["export_id"] != export_id


def test_a_writer_that_fails_midway_leaves_no_file_and_says_failed(
    call: Call, requested: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given memories, and a read that breaks after the first records
    seed(call, ALICE)
    export_id = start(call)["json"]["export_id"]
    real = users.stream

    def breaking(user_id: str) -> Any:
        for n, entry in enumerate(real(user_id)):
            if n == 2:
                raise UpstreamUnavailable("the table went away", retry_after=2)
            yield entry

    monkeypatch.setattr(users, "stream", breaking)
    # When the writer runs
    assert run_writer("alice", export_id) == {"outcome": "failed"}
    # Then the export is failed, with no file left behind, and the error's text is not in the answer
    answer = state(call, export_id)
    assert answer["json"] == {"status": "failed"} and "table went away" not in answer["body"]
    assert objects() == []


def test_delete_me_deletes_the_export_files_and_a_writer_that_finishes_after_leaves_none(
    call: Call, requested: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given alice's written export and bob's
    mine = start(call)["json"]["export_id"]
    run_writer("alice", mine)
    bobs = start(call, BOB)["json"]["export_id"]
    run_writer("bob", bobs)
    # And an export of alice's still being written
    pending = start(call)["json"]["export_id"]
    # When alice deletes everything
    assert call("me_delete", "DELETE", "/me", who=ALICE)["statusCode"] == 200
    # Then her file is gone at once, bob's is there
    assert objects(keymod.export_user_prefix("alice")) == []
    assert objects(keymod.export_user_prefix("bob")) == [keymod.export_key("bob", bobs)]
    assert state(call, mine)["statusCode"] == 404
    # And the writer of the pending one finds its record gone and leaves nothing
    assert run_writer("alice", pending) == {"outcome": "gone"}
    assert objects(keymod.export_user_prefix("alice")) == []


def test_a_file_larger_than_a_part_is_uploaded_in_parts(aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given 20 MB of lines (S3's parts are 5 MiB at least; the writer's are 8 MiB)
    chunk = ("x" * 1023 + "\n").encode()
    calls: list[str] = []
    client = store.bucket.client()
    real = client.upload_part

    def counting(**kwargs: Any) -> Any:
        calls.append(kwargs["Key"])
        return real(**kwargs)

    monkeypatch.setattr(client, "upload_part", counting)
    # When it is uploaded as a stream
    size = store.upload("alice", "e" * 32, (chunk for _ in range(20 * 1024)))
    # Then it went in three parts and is whole
    assert size == 20 * 1024 * 1024 and len(calls) == 3
    got = boto3.client("s3").get_object(Bucket=SNAPSHOT_BUCKET, Key=keymod.export_key("alice", "e" * 32))
    assert got["ContentLength"] == size and got["ContentType"].startswith("application/x-ndjson")
