"""Provider keys (KMS, hints only, used for the user's Gemini calls), export and deletion."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.gemini import GeminiDouble
from harness.lambdas import ALICE, LambdaContext, agent, load_function, sample_event, user
from synapse.aws import kms as secrets
from synapse.services.account import providers
from synapse.store.account import credentials
from tests.conftest import IDEMPOTENCY, TABLE, Call

GEMINI_KEY = "AIzaSyD-own-user-key-0123456789xYz"


def put_key(
    call: Call, who: dict[str, str] = ALICE, provider: str = "gemini", key: str = GEMINI_KEY
) -> dict[str, Any]:
    return call(
        "providers_put",
        "PUT",
        f"/providers/{provider}",
        route="/providers/{provider}",
        path_params={"provider": provider},
        body={"api_key": key},
        who=who,
    )


def test_a_provider_key_is_stored_encrypted_and_shown_as_a_hint(call: Call, aws: Any) -> None:
    answer = put_key(call)
    assert answer["statusCode"] == 200
    assert answer["json"]["provider"] == "gemini" and answer["json"]["hint"] == "AIza…9xYz"
    assert answer["json"]["updated_at"].endswith("Z")
    # the table holds ciphertext only
    assert GEMINI_KEY not in str(aws.scan(TableName=TABLE)["Items"])
    assert GEMINI_KEY.encode() not in repr(aws.scan(TableName=TABLE)["Items"]).encode()
    listed = call("providers_list", "GET", "/providers", who=ALICE)
    assert listed["json"] == {"providers": [answer["json"]]}
    assert GEMINI_KEY not in listed["body"]
    # and only the owner's context decrypts it
    assert providers.gemini_key_for("alice") == GEMINI_KEY


def test_a_ciphertext_copied_to_another_user_does_not_decrypt(call: Call, aws: Any) -> None:
    put_key(call)
    record = credentials.get_provider("alice", "gemini")
    assert record is not None
    credentials.put_provider("mallory", record)  # an attacker with table access copies the item
    with pytest.raises(secrets.DecryptionRefused):
        secrets.decrypt("mallory", "gemini", record.ciphertext)
    assert providers.gemini_key_for("mallory") is None


def test_provider_routes_are_for_users_only_and_validated(call: Call) -> None:
    assert put_key(call, who=agent())["statusCode"] == 403
    assert call("providers_list", "GET", "/providers", who=agent())["statusCode"] == 403
    assert put_key(call, provider="openai")["statusCode"] == 422
    assert put_key(call, key="short")["statusCode"] == 422
    assert put_key(call, key="has spaces in the key")["statusCode"] == 422
    forget = call(
        "providers_delete",
        "DELETE",
        "/providers/gemini",
        route="/providers/{provider}",
        path_params={"provider": "gemini"},
        who=ALICE,
    )
    assert forget["statusCode"] == 404


def test_forgetting_a_provider_key(call: Call) -> None:
    put_key(call)
    args = {"route": "/providers/{provider}", "path_params": {"provider": "gemini"}, "who": ALICE}
    assert call("providers_delete", "DELETE", "/providers/gemini", **args)["statusCode"] == 204
    assert call("providers_list", "GET", "/providers", who=ALICE)["json"] == {"providers": []}
    assert providers.gemini_key_for("alice") is None


def test_the_users_own_key_is_used_for_their_gemini_calls(call: Call, gemini_double: GeminiDouble) -> None:
    # Given the service key is the double's default fake key, and alice stores her own
    put_key(call)
    gemini_double.requests.clear()
    call(
        "memory_create",
        "POST",
        "/memory",
        body={"category": "fact", "key": "k", "content": "uses her own key"},
        who=ALICE,
    )
    # Then alice's embedding call carried her key; bob's carries the service key
    assert gemini_double.requests[-1].headers.get("x-goog-api-key") == GEMINI_KEY
    call(
        "memory_create",
        "POST",
        "/memory",
        body={"category": "fact", "key": "k", "content": "service key"},
        who=user("bob"),
    )
    assert gemini_double.requests[-1].headers.get("x-goog-api-key") != GEMINI_KEY


def seed(call: Call, who: dict[str, str]) -> None:
    call(
        "memory_create",
        "POST",
        "/memory",
        body={"category": "fact", "key": "k", "content": "a fact"},
        who=who,
    )
    call(
        "memory_ingest",
        "POST",
        "/memory/ingest",
        body={
            "sessionId": "s1",
            "messages": [{"role": "user", "content": "My name is Ann and I live in Oslo"}],
        },
        who=who,
    )
    call("memory_summarize", "POST", "/memory/summarize", body={"sessionId": "s1"}, who=who)
    put_key(call, who=who)


def test_export_holds_everything_but_vectors_and_secrets(call: Call) -> None:
    seed(call, ALICE)
    key = call("keys_create", "POST", "/keys", body={"name": "bot", "scopes": ["memory:read"]}, who=ALICE)[
        "json"
    ]["key"]
    answer = call("me_export", "GET", "/me/export", who=ALICE)
    assert answer["statusCode"] == 200
    data = answer["json"]
    assert {"memories", "identity", "summaries", "sessions"} <= set(data)
    assert {m["key"] for m in data["memories"]} >= {"k", "user_name", "user_location"}
    assert "Ann" in data["identity"]
    assert data["summaries"][0]["chunk_id"] == "sum:s1:chunk_1"
    assert data["sessions"][0]["session_id"] == "s1" and data["sessions"][0]["messages"][0][
        "content"
    ].startswith("My name")
    assert key not in answer["body"] and GEMINI_KEY not in answer["body"] and '"emb"' not in answer["body"]
    assert call("me_export", "GET", "/me/export", who=agent())["statusCode"] == 403


def test_export_tells_one_session_name_in_several_minds_apart(call: Call) -> None:
    # Given the session "chat" in the default mind and in two other minds, each with its summary
    minds = ["default"] + [
        call("minds_create", "POST", "/minds", body={"name": name}, who=ALICE)["json"]["mind_id"]
        for name in ("Work", "Travel")
    ]
    for n, mind in enumerate(minds):
        said = [{"role": "user", "content": f"I work at Company {n}"}]
        body = {"sessionId": "chat", "messages": said}
        headers = {"x-mind-id": mind}
        assert call("memory_ingest", "POST", "/memory/ingest", body=body, who=ALICE, headers=headers)[
            "statusCode"
        ] in (200, 201)
        summarized = call(
            "memory_summarize", "POST", "/memory/summarize", body=body, who=ALICE, headers=headers
        )
        assert summarized["statusCode"] == 200, summarized
    # When the user exports
    data = call("me_export", "GET", "/me/export", who=ALICE)["json"]
    # Then "chat" is three sessions and three summaries, each carrying the mind it belongs to
    sessions = {s["mind_id"]: s for s in data["sessions"]}
    assert sorted(sessions) == sorted(minds) and len(data["sessions"]) == 3
    for n, mind in enumerate(minds):
        assert sessions[mind]["session_id"] == "chat"
        assert [m["content"] for m in sessions[mind]["messages"]] == [f"I work at Company {n}"]
    summaries = {c["mind_id"]: c for c in data["summaries"]}
    assert sorted(summaries) == sorted(minds) and len(data["summaries"]) == 3
    for n, mind in enumerate(minds):
        assert summaries[mind]["session_id"] == "chat"
        assert f"Company {n}" in summaries[mind]["summary"]


def test_delete_me_removes_everything_of_the_user_and_nothing_else(call: Call, aws: Any) -> None:
    seed(call, ALICE)
    seed(call, user("bob"))
    key = call("keys_create", "POST", "/keys", body={"name": "bot", "scopes": ["memory:read"]}, who=ALICE)[
        "json"
    ]["key"]
    bob_items = aws.query(
        TableName=TABLE, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "mem:bob"}}
    )["Count"]
    assert call("me_delete", "DELETE", "/me", who=agent())["statusCode"] == 403
    answer = call("me_delete", "DELETE", "/me", who=ALICE)
    assert answer["statusCode"] == 200 and answer["json"]["deleted"] > 5
    left = aws.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "mem:alice"}},
    )
    assert left["Count"] == 0
    # the key's lookup item is gone too: the key stops working at once
    event = sample_event("authorizer")
    event["headers"] = {"authorization": f"Bearer {key}"}
    assert "userId" not in load_function("authorizer").handler(event, LambdaContext())["context"]
    assert not any(
        item["user_id"]["S"] == "alice" for item in aws.scan(TableName=TABLE)["Items"] if "user_id" in item
    )
    # bob is untouched
    assert (
        aws.query(
            TableName=TABLE,
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": {"S": "mem:bob"}},
        )["Count"]
        == bob_items
    )
    assert json.loads(json.dumps(call("me_export", "GET", "/me/export", who=ALICE)["json"]))["memories"] == []


def test_delete_me_also_deletes_the_cached_ingest_answers(call: Call, aws: Any) -> None:
    # Given alice and bob have each ingested (the idempotency table caches the answers, texts included)
    ingest = {
        "sessionId": "s1",
        "messages": [{"role": "user", "content": "ผมชื่อสมชาย อยู่เชียงใหม่ and I play the guitar"}],
    }
    first = call("memory_ingest", "POST", "/memory/ingest", body=ingest, who=ALICE)
    assert first["statusCode"] == 200 and first["json"]["nuggets_created"] >= 1
    call("memory_ingest", "POST", "/memory/ingest", body=ingest, who=user("bob"))

    def cached(user_id: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = aws.scan(TableName=IDEMPOTENCY)["Items"]
        return [i for i in items if i["id"]["S"] == f"mem:{user_id}"]

    assert len(cached("alice")) == 1 and len(cached("bob")) == 1
    assert "เชียงใหม่" in json.dumps(json.loads(cached("alice")[0]["data"]["S"]), ensure_ascii=False)

    # When alice deletes everything
    answer = call("me_delete", "DELETE", "/me", who=ALICE)

    # Then her cached answers are gone (and counted), bob's are kept
    assert answer["statusCode"] == 200
    assert cached("alice") == [] and len(cached("bob")) == 1
    # And the same ingest again is a new request: it stores the memories again
    again = call("memory_ingest", "POST", "/memory/ingest", body=ingest, who=ALICE)
    assert again["statusCode"] == 200 and again["json"]["nuggets_created"] == first["json"]["nuggets_created"]
    listed = call("memory_list", "GET", "/memory", who=ALICE)["json"]["memories"]
    assert len(listed) == first["json"]["nuggets_created"]
