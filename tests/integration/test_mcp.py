"""POST /mcp in process (moto): the tools' schemas are the routes' models, a failing tool is a result
with isError that changes nothing, and the HTTP layer answers in the contract's envelope."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.lambdas import ALICE, agent
from synapse.core.models.chat import ContextIn, ForgetIn, RecallIn, SearchIn
from synapse.core.models.memory import MemoryIn
from synapse.http import mcp as mcp_tools
from tests.conftest import Call
from tests.integration.test_auth_matrix import snapshot


def rpc(call: Call, method: str, params: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": method}
    if params is not None:
        message["params"] = params
    kwargs.setdefault("who", ALICE)
    return call("mcp", "POST", "/mcp", body=message, **kwargs)


def tool(call: Call, name: str, arguments: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    answer = rpc(call, "tools/call", {"name": name, "arguments": arguments}, **kwargs)
    assert answer["statusCode"] == 200, answer["body"]
    result: dict[str, Any] = answer["json"]["result"]
    return result


def text(result: dict[str, Any]) -> str:
    return "\n".join(c["text"] for c in result["content"])


def test_each_tool_takes_its_routes_model_as_input_schema(call: Call) -> None:
    answer = rpc(call, "tools/list")
    assert answer["statusCode"] == 200
    listed = {t["name"]: t for t in answer["json"]["result"]["tools"]}
    models = {
        "remember": MemoryIn,
        "recall": RecallIn,
        "search": SearchIn,
        "forget": ForgetIn,
        "context": ContextIn,
    }
    assert set(listed) == set(models)
    for name, model in models.items():
        schema = model.model_json_schema()
        schema["properties"].pop("userId", None)
        assert listed[name]["inputSchema"] == schema, name
        assert listed[name]["annotations"]["readOnlyHint"] is (name in {"recall", "search", "context"})
    assert (
        listed["remember"]["inputSchema"]["properties"]["key"]["pattern"]
        == MemoryIn.model_json_schema()["properties"]["key"]["pattern"]
    )


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("remember", {"category": "hobby", "key": "x", "content": "y"}, "category"),
        ("remember", {"category": "fact", "key": "Not A Key", "content": "y"}, "key"),
        ("remember", {"category": "fact", "key": "k", "content": "y", "confidence": "0.5"}, "confidence"),
        ("recall", {"query": "x", "limit": 500}, "limit"),
        ("search", {"q": ""}, "q"),
        ("forget", {}, "id"),
        ("context", {"query": "x", "sessionId": "a:b"}, "sessionId"),
    ],
)
def test_invalid_arguments_are_a_tool_error_that_changes_nothing(
    call: Call, aws: Any, name: str, arguments: dict[str, Any], says: str
) -> None:
    before = snapshot(aws)
    result = tool(call, name, arguments)
    assert result["isError"] is True
    assert says in text(result) and "Traceback" not in text(result)
    assert snapshot(aws) == before


def test_a_read_only_key_is_refused_the_writing_tools_and_nothing_changes(call: Call, aws: Any) -> None:
    made = tool(call, "remember", {"category": "fact", "key": "pet", "content": "I have a cat"})
    before = snapshot(aws)
    reader = agent(scopes="memory:read")
    for name, arguments in [
        ("remember", {"category": "fact", "key": "pet", "content": "a dog"}),
        ("forget", {"id": made["structuredContent"]["id"]}),
    ]:
        result = tool(call, name, arguments, who=reader)
        assert result["isError"] is True and "memory:write" in text(result)
    assert snapshot(aws) == before
    assert "I have a cat" in text(tool(call, "recall", {"query": "cat"}, who=reader))
    # and a write-only key cannot read
    assert tool(call, "recall", {"query": "cat"}, who=agent(scopes="memory:write"))["isError"] is True


def test_tools_act_like_their_routes(call: Call) -> None:
    made = tool(call, "remember", {"category": "identity", "key": "user_name", "content": "สมชาย ใจดี"})
    memory = made["structuredContent"]
    got = call(
        "memory_get",
        "GET",
        f"/memory/{memory['id']}",
        route="/memory/{id}",
        path_params={"id": memory["id"]},
        who=ALICE,
    )
    assert got["json"] == memory and memory["source"] == "user" and memory["verified"] is True
    # an agent's remember of the same key: an update, unverified, the human's version kept in the history
    again = tool(
        call, "remember", {"category": "identity", "key": "user_name", "content": "Somchai"}, who=agent()
    )
    assert (
        again["structuredContent"]["id"] == memory["id"] and again["structuredContent"]["verified"] is False
    )
    history = call(
        "memory_history", "GET", f"/memory/{memory['id']}/history", route="/memory/{id}/history",
        path_params={"id": memory["id"]}, who=ALICE,
    )  # fmt: skip
    assert [v["content"] for v in history["json"]["versions"]] == ["Somchai", "สมชาย ใจดี"]
    # recall's text lists the memories, one per line, as POST /memory/recall ranks them
    route = call("memory_recall", "POST", "/memory/recall", body={"query": "ชื่ออะไร", "limit": 5}, who=ALICE)
    lines = text(tool(call, "recall", {"query": "ชื่ออะไร", "limit": 5})).splitlines()
    assert len(lines) == len(route["json"]["memories"]) and lines[0].startswith(
        "- [identity/user_name] Somchai"
    )
    # forget deletes it, and a second forget is a not-found tool error
    assert tool(call, "forget", {"id": memory["id"]})["isError"] is False
    missing = tool(call, "forget", {"id": memory["id"]})
    assert missing["isError"] is True and "no memory" in text(missing).lower()


def test_the_transport_answers_in_the_envelope(call: Call) -> None:
    # a notification is accepted without a body
    note = call(
        "mcp", "POST", "/mcp", body={"jsonrpc": "2.0", "method": "notifications/initialized"}, who=ALICE
    )
    assert note["statusCode"] == 202 and not note.get("body") and "content-type" not in note["headers"]
    # JSON that is not an MCP message: 422; not JSON: 400; both in the envelope
    wrong = call("mcp", "POST", "/mcp", body={"hello": "world"}, who=ALICE)
    assert wrong["statusCode"] == 422 and wrong["json"]["error"]["code"] == "validation_error"
    broken = call("mcp", "POST", "/mcp", raw_body='{"jsonrpc": "2.0",', who=ALICE)
    assert broken["statusCode"] == 400 and broken["json"]["error"]["code"] == "invalid_json"
    # an unknown tool or method is a JSON-RPC error of the protocol
    unknown = rpc(call, "tools/call", {"name": "teleport", "arguments": {}})
    assert unknown["statusCode"] == 200 and unknown["json"]["error"]["code"] == -32602
    assert rpc(call, "resources/list")["json"]["error"]["code"] == -32601
    # a mind the user does not have: 404 before any tool runs
    lost = rpc(call, "tools/list", headers={"x-mind-id": "m_000000000000"})
    assert lost["statusCode"] == 404 and lost["json"]["error"]["code"] == "not_found"


def test_a_batch_is_one_clean_422(call: Call) -> None:
    # Given a JSON-RPC batch (MCP dropped batches in 2025-06-18: a POST carries one message)
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    ]
    # When it is posted
    answer = call("mcp", "POST", "/mcp", raw_body=json.dumps(batch), who=ALICE)
    # Then it is refused in the envelope, in one sentence with details (it was the SDK's pydantic
    # dump, with links to pydantic's site, and no details)
    assert answer["statusCode"] == 422
    assert answer["json"]["error"] == {
        "code": "validation_error",
        "message": "Invalid request: must be a JSON object, not an array.",
        "details": [{"loc": ["body"], "msg": "must be a JSON object, not an array"}],
    }


def test_an_unknown_protocol_version_is_400_as_mcp_says_in_the_envelope(call: Call) -> None:
    # Given a request naming a protocol version this server does not speak
    for version in ("1900-01-01", "not-a-version"):
        # When it is posted
        answer = rpc(call, "tools/list", headers={"mcp-protocol-version": version})
        # Then it is 400 Bad Request (the transport's MUST), in the envelope (the contract's code for
        # 400), with the versions it takes
        assert answer["statusCode"] == 400
        err = answer["json"]["error"]
        assert err["code"] == "invalid_json"
        assert err["message"] == "The MCP-Protocol-Version header names a version this server does not speak."
        [detail] = err["details"]
        assert detail["loc"] == ["header", "mcp-protocol-version"]
        assert "2025-06-18" in detail["msg"] and "pydantic" not in json.dumps(err)
    # And a version it speaks is served
    assert rpc(call, "tools/list", headers={"mcp-protocol-version": "2025-06-18"})["statusCode"] == 200


def test_a_message_the_sdk_refuses_is_one_clean_422(call: Call) -> None:
    # Given a request of the stateless revision (2026-07-28) without that revision's envelope
    answer = rpc(call, "tools/list", headers={"mcp-protocol-version": "2026-07-28"})
    # Then the SDK's refusal is the envelope: one sentence, its reason (one line) as the detail
    assert answer["statusCode"] == 422
    err = answer["json"]["error"]
    assert err["message"] == "Not an MCP message this endpoint takes."
    [detail] = err["details"]
    assert detail["loc"] == ["body"] and "_meta" in detail["msg"] and "\n" not in detail["msg"]


def test_an_unexpected_failure_is_a_plain_tool_error(call: Call, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_: Any, **__: Any) -> Any:
        raise RuntimeError("secret internals: AIzaSy-should-not-leak")

    monkeypatch.setattr(mcp_tools.recall, "recall", boom)
    result = tool(call, "recall", {"query": "anything"})
    assert result["isError"] is True
    assert text(result) == "Something went wrong on our side."
    assert "AIzaSy" not in json.dumps(result)
