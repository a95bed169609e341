"""POST /mcp through the local server, driven by the official MCP SDK's own client: its Streamable HTTP
client transport and `ClientSession`, as an MCP host would connect (an API key as the bearer header)."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
import requests
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.conftest import LocalServer

TOOLS = {"remember", "recall", "search", "forget", "context"}


@asynccontextmanager
async def connect(server: LocalServer, token: str, mind: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}", **({"X-Mind-Id": mind} if mind else {})}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{server.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: Any) -> str:
    assert isinstance(result, types.CallToolResult), result
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def new_user(server: LocalServer) -> tuple[str, dict[str, str]]:
    name = f"mcp-{uuid.uuid4().hex[:8]}"
    token = server.make_jwt(name)
    return token, {"Authorization": f"Bearer {token}", "content-type": "application/json"}


def make_key(server: LocalServer, headers: dict[str, str], scopes: list[str], mind: str | None = None) -> str:
    body: dict[str, Any] = {"name": f"agent {uuid.uuid4().hex[:6]}", "scopes": scopes}
    if mind:
        body["mind_id"] = mind
    resp = requests.post(f"{server.url}/keys", headers=headers, json=body, timeout=30)
    assert resp.status_code == 201, resp.text
    return str(resp.json()["key"])


def run(coro: Any) -> Any:
    return anyio.run(lambda: coro)


def test_an_agent_lists_the_tools_remembers_recalls_and_gets_its_context(local_server: LocalServer) -> None:
    _, headers = new_user(local_server)
    key = make_key(local_server, headers, ["memory:read", "memory:write"])

    async def journey() -> None:
        async with connect(local_server, key) as mcp:
            # the five tools, each with its route model's schema and a description to act on
            listed = await mcp.list_tools()
            assert {t.name for t in listed.tools} == TOOLS
            remember = next(t for t in listed.tools if t.name == "remember")
            assert set(remember.input_schema["required"]) == {"category", "key", "content"}
            assert "userId" not in remember.input_schema["properties"]
            assert "update" in (remember.description or "")

            # remember a fact, in English and in Thai; the same key again updates it in place
            first = await mcp.call_tool(
                "remember", {"category": "fact", "key": "home_city", "content": "I live in Chiang Mai"}
            )
            assert not first.is_error and "new memory" in text_of(first)
            again = await mcp.call_tool(
                "remember",
                {
                    "category": "fact",
                    "key": "home_city",
                    "content": "I moved to Bangkok in May",
                    "tags": ["home"],
                },
            )
            assert not again.is_error and "Updated" in text_of(again)
            assert again.structured_content["id"] == first.structured_content["id"]
            assert again.structured_content["version"] == 2
            thai = await mcp.call_tool(
                "remember", {"category": "preference", "key": "favourite_food", "content": "ชอบกินข้าวซอยไก่"}
            )
            assert not thai.is_error

            # recall finds them, one memory per line
            found = await mcp.call_tool("recall", {"query": "Where did I move in May?", "limit": 3})
            assert not found.is_error
            lines = text_of(found).splitlines()
            assert lines[0].startswith("- [fact/home_city] I moved to Bangkok in May")
            th = await mcp.call_tool("recall", {"query": "ข้าวซอย", "limit": 1})
            assert "ชอบกินข้าวซอยไก่" in text_of(th)

            # search by words within a tag, then forget what it found
            hits = await mcp.call_tool("search", {"q": "Bangkok", "tag": "home"})
            assert "I moved to Bangkok" in text_of(hits)

            # and the context block for the next turn
            ctx = await mcp.call_tool("context", {"query": "what should I eat tonight?"})
            assert not ctx.is_error
            memories_part = text_of(ctx).split("Relevant memories:\n", 1)[1]
            assert "- ชอบกินข้าวซอยไก่" in memories_part.splitlines()

            gone = await mcp.call_tool("forget", {"id": first.structured_content["id"]})
            assert not gone.is_error
            missing = await mcp.call_tool("forget", {"id": first.structured_content["id"]})
            assert missing.is_error

    run(journey())
    # the API agrees: what the agent remembered is an unverified agent memory, and the forgotten one is gone
    listing = requests.get(f"{local_server.url}/memory", headers=headers, timeout=30).json()["memories"]
    assert [(m["key"], m["source"], m["verified"]) for m in listing] == [("favourite_food", "agent", False)]


def test_a_context_tool_call_is_the_context_route_for_a_thai_and_an_english_session(
    local_server: LocalServer,
) -> None:
    jwt, headers = new_user(local_server)
    for session, messages, query in [
        ("th-1", ["สวัสดีครับ ผมชื่อสมชาย", "ผมอยู่เชียงใหม่และชอบกินข้าวซอย"], "ผมชอบกินอะไร"),
        ("en-1", ["Hi, I am Dana and I work at Acme as a nurse", "I prefer the dark theme"], "which theme?"),
    ]:
        body = {"sessionId": session, "messages": [{"role": "user", "content": m} for m in messages]}
        ingested = requests.post(f"{local_server.url}/memory/ingest", headers=headers, json=body, timeout=60)
        assert ingested.status_code == 200, ingested.text
        route = requests.post(
            f"{local_server.url}/memory/context",
            headers=headers,
            json={"sessionId": session, "query": query},
            timeout=60,
        )
        assert route.status_code == 200, route.text
        assert route.json()["recent"] and route.json()["memories"]

        async def tool(session: str = session, query: str = query) -> str:
            async with connect(local_server, jwt) as mcp:
                return text_of(await mcp.call_tool("context", {"query": query, "sessionId": session}))

        assert run(tool()) == route.json()["prompt"]


def test_a_read_only_key_may_recall_but_not_remember_or_forget(local_server: LocalServer) -> None:
    _, headers = new_user(local_server)
    key = make_key(local_server, headers, ["memory:read"])
    made = requests.post(
        f"{local_server.url}/memory",
        headers=headers,
        json={"category": "fact", "key": "pet", "content": "I have a cat called Mochi"},
        timeout=30,
    )
    assert made.status_code == 201

    async def journey() -> None:
        async with connect(local_server, key) as mcp:
            assert {t.name for t in (await mcp.list_tools()).tools} == TOOLS
            assert "Mochi" in text_of(await mcp.call_tool("recall", {"query": "my cat"}))
            refused = await mcp.call_tool("remember", {"category": "fact", "key": "pet", "content": "a dog"})
            assert refused.is_error and "memory:write" in text_of(refused)
            refused = await mcp.call_tool("forget", {"id": made.json()["id"]})
            assert refused.is_error and "memory:write" in text_of(refused)

    run(journey())
    after = requests.get(f"{local_server.url}/memory/{made.json()['id']}", headers=headers, timeout=30).json()
    assert (after["content"], after["version"]) == ("I have a cat called Mochi", 1)


def test_a_bad_token_is_refused_before_any_mcp_message(local_server: LocalServer) -> None:
    # the SDK's client surfaces the HTTP 401 as a failed initialize
    async def attempt() -> None:
        async with connect(local_server, "gts_live_" + "x" * 40):
            pass

    with pytest.raises(Exception):  # noqa: B017  (the SDK's own transport error type)
        run(attempt())
    # and over plain HTTP: 401 in the contract's envelope
    resp = requests.post(
        f"{local_server.url}/mcp",
        headers={"Authorization": "Bearer not-a-token", "content-type": "application/json"},
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        timeout=30,
    )
    assert resp.status_code == 401 and resp.json()["error"]["code"] == "unauthorized"


def test_a_mind_key_works_in_its_mind_only(local_server: LocalServer) -> None:
    _, headers = new_user(local_server)
    mind = requests.post(
        f"{local_server.url}/minds", headers=headers, json={"name": "support bot"}, timeout=30
    )
    assert mind.status_code == 201
    mind_id = mind.json()["mind_id"]
    key = make_key(local_server, headers, ["memory:read", "memory:write"], mind=mind_id)

    async def remember() -> None:
        async with connect(local_server, key) as mcp:
            done = await mcp.call_tool("remember", {"category": "note", "key": "tone", "content": "Be brief"})
            assert not done.is_error and done.structured_content["mind_id"] == mind_id

    run(remember())
    in_mind = requests.get(
        f"{local_server.url}/memory", headers={**headers, "X-Mind-Id": mind_id}, timeout=30
    )
    assert [m["key"] for m in in_mind.json()["memories"]] == ["tone"]
    assert requests.get(f"{local_server.url}/memory", headers=headers, timeout=30).json()["memories"] == []
    # a Mind Key naming another mind: 403 before any MCP message
    other = requests.post(
        f"{local_server.url}/mcp",
        headers={
            "Authorization": f"Bearer {key}",
            "X-Mind-Id": "default",
            "content-type": "application/json",
        },
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        timeout=30,
    )
    assert other.status_code == 403 and other.json()["error"]["code"] == "forbidden"


def test_a_batch_and_an_unknown_protocol_version_are_answered_in_the_envelope(
    local_server: LocalServer,
) -> None:
    _, headers = new_user(local_server)
    key = make_key(local_server, headers, ["memory:read"])
    agent = {"Authorization": f"Bearer {key}", "content-type": "application/json"}
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    # a JSON-RPC batch: MCP takes one message a POST; 422, one sentence, details, no pydantic dump
    batch = requests.post(f"{local_server.url}/mcp", headers=agent, json=[listing, listing], timeout=30)
    assert batch.status_code == 422
    assert batch.json() == {
        "error": {
            "code": "validation_error",
            "message": "Invalid request: must be a JSON object, not an array.",
            "details": [{"loc": ["body"], "msg": "must be a JSON object, not an array"}],
        }
    }
    # a protocol version the server does not speak: 400, as MCP's transport requires
    unknown = requests.post(
        f"{local_server.url}/mcp",
        headers={**agent, "MCP-Protocol-Version": "1900-01-01"},
        json=listing,
        timeout=30,
    )
    assert unknown.status_code == 400
    err = unknown.json()["error"]
    assert err["code"] == "invalid_json" and "\n" not in err["message"]
    assert err["details"][0]["loc"] == ["header", "mcp-protocol-version"]
    assert "pydantic" not in unknown.text
