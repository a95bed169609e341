"""API keys (users only, shown once, hashed, revocable) and the authorizer that reads them."""

from __future__ import annotations

import hashlib
import time
from typing import Any

import jwt

from harness.lambdas import ALICE, LambdaContext, agent, load_function, sample_event
from tests.conftest import TABLE, Call

SECRET = "test-secret-that-is-long-enough-for-hs256"


def authorize(header: str | None) -> dict[str, Any]:
    event = sample_event("authorizer")
    event["headers"] = {"authorization": header} if header is not None else {}
    result: dict[str, Any] = load_function("authorizer").handler(event, LambdaContext())
    return result


def make_key(call: Call, scopes: list[str]) -> dict[str, Any]:
    answer = call("keys_create", "POST", "/keys", body={"name": "my agent", "scopes": scopes}, who=ALICE)
    assert answer["statusCode"] == 201, answer
    return answer["json"]


def test_a_key_is_shown_once_stored_hashed_and_works_until_revoked(call: Call, aws: Any) -> None:
    # Given alice creates a key
    created = make_key(call, ["memory:read"])
    key = created["key"]
    assert key.startswith("gts_live_") and len(key) >= len("gts_live_") + 32
    assert created["scopes"] == ["memory:read"] and created["created_at"].endswith("Z")
    # Then the table holds only its SHA-256, never the key
    dump = str(aws.scan(TableName=TABLE)["Items"])
    assert key not in dump and hashlib.sha256(key.encode()).hexdigest() in dump
    # and listing shows a hint, not the key
    listed = call("keys_list", "GET", "/keys", who=ALICE)["json"]["keys"]
    assert [k["key_id"] for k in listed] == [created["key_id"]]
    assert "key" not in listed[0] and listed[0]["hint"].endswith(key[-4:])
    # When the authorizer sees it: an agent of alice with that scope
    context = authorize(f"Bearer {key}")["context"]
    assert context == {
        "userId": "alice",
        "kind": "agent",
        "scopes": "memory:read",
        "keyId": created["key_id"],
        "mindId": "default",  # a Mind Key of the default mind (API.md, second release)
    }
    # When alice revokes it, it stops working at once
    path = f"/keys/{created['key_id']}"
    gone = call(
        "keys_delete",
        "DELETE",
        path,
        route="/keys/{keyId}",
        path_params={"keyId": created["key_id"]},
        who=ALICE,
    )
    assert gone["statusCode"] == 204
    assert authorize(f"Bearer {key}")["context"]["error"]
    assert call("keys_list", "GET", "/keys", who=ALICE)["json"]["keys"] == []
    again = call(
        "keys_delete",
        "DELETE",
        path,
        route="/keys/{keyId}",
        path_params={"keyId": created["key_id"]},
        who=ALICE,
    )
    assert again["statusCode"] == 404


def test_keys_are_for_users_only(call: Call) -> None:
    for function, method, path in [("keys_create", "POST", "/keys"), ("keys_list", "GET", "/keys")]:
        answer = call(function, method, path, body={"name": "x", "scopes": ["memory:read"]}, who=agent())
        assert answer["statusCode"] == 403 and answer["json"]["error"]["code"] == "forbidden"


def test_key_requests_are_validated(call: Call) -> None:
    for body in [
        {"name": "", "scopes": ["memory:read"]},
        {"name": "x", "scopes": []},
        {"name": "x", "scopes": ["admin"]},
    ]:
        answer = call("keys_create", "POST", "/keys", body=body, who=ALICE)
        assert answer["statusCode"] == 422, body
    # a scope named twice beside the other is both scopes, not a list too long
    repeated = {"name": "x", "scopes": ["memory:read", "memory:read", "memory:write"]}
    answer = call("keys_create", "POST", "/keys", body=repeated, who=ALICE)
    assert answer["statusCode"] == 201 and answer["json"]["scopes"] == ["memory:read", "memory:write"], answer
    too_many = {"name": "x", "scopes": ["memory:read"] * 11}
    assert call("keys_create", "POST", "/keys", body=too_many, who=ALICE)["statusCode"] == 422


def test_keys_of_one_user_cannot_be_revoked_by_another(call: Call) -> None:
    created = make_key(call, ["memory:read", "memory:write"])
    bob = {"userId": "bob", "kind": "user", "scopes": "memory:read memory:write", "keyId": ""}
    answer = call(
        "keys_delete",
        "DELETE",
        f"/keys/{created['key_id']}",
        route="/keys/{keyId}",
        path_params={"keyId": created["key_id"]},
        who=bob,
    )
    assert answer["statusCode"] == 404
    assert authorize(f"Bearer {created['key']}")["context"]["userId"] == "alice"


def test_the_authorizer_accepts_a_user_jwt(aws: Any) -> None:
    token = jwt.encode({"sub": "alice", "exp": int(time.time()) + 60}, SECRET, algorithm="HS256")
    result = authorize(f"Bearer {token}")
    assert result == {
        "isAuthorized": True,
        "context": {
            "userId": "alice",
            "kind": "user",
            "scopes": "memory:read memory:write",
            "keyId": "",
            "mindId": "default",
        },
    }


def test_the_authorizer_refuses_bad_tokens_with_a_reason(aws: Any) -> None:
    expired = jwt.encode({"sub": "alice", "exp": int(time.time()) - 3600}, SECRET, algorithm="HS256")
    no_exp = jwt.encode({"sub": "alice"}, SECRET, algorithm="HS256")
    unsigned = jwt.encode({"sub": "alice", "exp": int(time.time()) + 60}, None, algorithm="none")
    forged = jwt.encode(
        {"sub": "alice", "exp": int(time.time()) + 60}, "another-secret-another-secret-xx", algorithm="HS256"
    )
    for header in [
        None,
        "",
        "Basic abc",
        "Bearer",
        f"Bearer {expired}",
        f"Bearer {no_exp}",
        f"Bearer {unsigned}",
        f"Bearer {forged}",
        "Bearer gts_live_short",
        "Bearer gts_live_" + "a" * 40,
    ]:
        result = authorize(header)
        assert result["isAuthorized"] is True and "userId" not in result["context"], header
        assert result["context"]["error"], header


def test_a_key_lookup_the_database_cannot_answer_is_a_503_in_the_envelope(call: Call, aws: Any) -> None:
    key = call("keys_create", "POST", "/keys", body={"name": "bot", "scopes": ["memory:read"]}, who=ALICE)[
        "json"
    ]
    # Given the table is gone (or access denied): botocore raises a ClientError on the lookup
    aws.delete_table(TableName=TABLE)
    # When the agent's request is authorized
    result = authorize(f"Bearer {key['key']}")
    # Then the authorizer does not fail (a bare 500 on AWS): it says why, and the route answers 503
    assert result["isAuthorized"] is True and "userId" not in result["context"], result
    assert result["context"]["unavailable"] and result["context"]["retryAfter"] == 5
    answer = call("memory_list", "GET", "/memory", who=result["context"])
    assert answer["statusCode"] == 503 and answer["json"]["error"]["code"] == "upstream_unavailable"
    assert answer["headers"]["retry-after"] == "5"
