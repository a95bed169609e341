"""The mind a request acts in is resolved once, at the edge (`http.caller.mind`, a Powertools
dependency nested on the caller): whatever the route's services do, the mind's item is read at most
once per request. Before, each service resolved it again (history read it twice, plain-text recall
twice, context twice)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from harness.lambdas import ALICE, LambdaContext, http_event, load_function
from synapse.core.models.base import Category
from synapse.core.models.memory import MemoryIn
from synapse.core.principal import ALL_SCOPES, Principal
from synapse.store import db
from synapse.store.keys import Space
from synapse.store.minds import Mind
from tests.conftest import Call
from tests.integration.test_minds import make_mind, mind_key


@pytest.fixture
def mind_reads(aws: Any) -> Iterator[list[str]]:
    """Every GetItem or Query of a mind's item (`mind:<id>`) from now on, by operation name."""
    reads: list[str] = []

    def count(params: dict[str, Any], model: Any, **_: Any) -> None:
        key = params.get("Key") or {}
        wanted = json.dumps(params.get("ExpressionAttributeValues") or {})
        if str(key.get("sk", {}).get("S", "")).startswith("mind:") or '"mind:' in wanted:
            reads.append(model.name)

    db.client().meta.events.register("before-parameter-build.dynamodb", count)
    yield reads


def requests(mem_id: str, said: str = "I live in Bergen now") -> list[tuple[str, str, str, dict[str, Any]]]:
    """One request of every route that acts in a mind (function, method, path, the rest)."""
    by_id = {"route": "/memory/{id}", "path_params": {"id": mem_id}}
    return [
        ("memory_create", "POST", "/memory", {"body": {"category": "fact", "key": "k2", "content": "Oslo"}}),
        ("memory_get", "GET", f"/memory/{mem_id}", by_id),
        ("memory_update", "PUT", f"/memory/{mem_id}", {**by_id, "body": {"content": "Bergen"}}),
        ("memory_verify", "POST", f"/memory/{mem_id}/verify", {**by_id, "route": "/memory/{id}/verify"}),
        ("memory_history", "GET", f"/memory/{mem_id}/history", {**by_id, "route": "/memory/{id}/history"}),
        (
            "memory_restore",
            "POST",
            f"/memory/{mem_id}/restore",
            {**by_id, "route": "/memory/{id}/restore", "body": {"version": 1}},
        ),
        ("memory_list", "GET", "/memory", {}),
        ("memory_by_tag", "GET", "/memory/by-tag", {"query": {"tag": "city"}}),
        ("memory_search", "GET", "/memory/search", {"query": {"q": "Bergen"}}),
        ("memory_expiring", "GET", "/memory/expiring", {}),
        ("memory_recall_text", "GET", "/memory/recall", {}),
        ("memory_recall", "POST", "/memory/recall", {"body": {"query": "Bergen"}}),
        ("memory_context", "POST", "/memory/context", {"body": {"query": "Bergen", "sessionId": "s1"}}),
        (
            "memory_identity",
            "GET",
            "/memory/identity/alice",
            {"route": "/memory/identity/{userId}", "path_params": {"userId": "alice"}},
        ),
        (
            "memory_ingest",
            "POST",
            "/memory/ingest",
            {"body": {"sessionId": "s1", "messages": [{"role": "user", "content": said}]}},
        ),
        (
            "memory_summaries",
            "GET",
            "/memory/summaries/s1",
            {"route": "/memory/summaries/{sessionId}", "path_params": {"sessionId": "s1"}},
        ),
        ("memory_summarize", "POST", "/memory/summarize", {"body": {"sessionId": "s1"}}),
        (
            "mcp",
            "POST",
            "/mcp",
            {
                "body": {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "context", "arguments": {"query": "Bergen"}},
                }
            },
        ),
        ("memory_delete", "DELETE", f"/memory/{mem_id}", by_id),
    ]


def test_a_user_in_a_named_mind_reads_its_item_once_per_request_on_every_route(
    call: Call, mind_reads: list[str]
) -> None:
    # Given alice acting in a mind of hers (X-Mind-Id), with a memory there
    mind_id = make_mind(call, "Travel")["json"]["mind_id"]
    there = {"x-mind-id": mind_id}
    made = call(
        "memory_create",
        "POST",
        "/memory",
        body={"category": "fact", "key": "k1", "content": "Bergen", "tags": ["city"]},
        who=ALICE,
        headers=there,
    )
    assert made["statusCode"] == 201
    # When she calls every route that acts in a mind
    for function, method, path, rest in requests(made["json"]["id"]):
        mind_reads.clear()
        answer = call(function, method, path, who=ALICE, headers=there, **rest)
        # Then each answers, having read the mind's item exactly once (to know it exists)
        assert answer["statusCode"] < 300, (function, answer.get("body"))
        assert mind_reads == ["GetItem"], (function, mind_reads)


def test_a_mind_key_and_the_default_mind_read_the_item_only_when_a_route_needs_it(
    call: Call, mind_reads: list[str]
) -> None:
    # Given an agent with a Mind Key, and alice in her default mind
    mind_id = make_mind(call, "Support")["json"]["mind_id"]
    bot = mind_key(call, mind_id)
    for who, name in ((bot, "Support"), (ALICE, "alice")):
        made = call(
            "memory_create",
            "POST",
            "/memory",
            body={"category": "fact", "key": "k1", "content": "x"},
            who=who,
        )
        # (each says something else: the same turns of one user within an hour are one ingest)
        for function, method, path, rest in requests(made["json"]["id"], f"{name} lives in Bergen"):
            if function == "memory_verify" and who is bot:
                continue  # (users only)
            mind_reads.clear()
            answer = call(function, method, path, who=who, **rest)
            assert answer["statusCode"] < 300, (function, answer.get("body"))
            # Then no route reads the mind's item, but plain-text recall, once, for a Mind Key's
            # mind's name ("Mind: Support"); the default mind's name is the userId
            named = function == "memory_recall_text" and who is bot
            assert mind_reads == (["GetItem"] if named else []), (function, mind_reads)
            if function == "memory_recall_text":
                assert answer["body"].startswith(f"Mind: {name}\n")


def test_an_unknown_mind_is_404_before_the_route_runs(call: Call, mind_reads: list[str]) -> None:
    for function, method, path, rest in requests("6f1c0c2e-8f1e-5b7a-9c1d-0a7e4f2b9c11"):
        mind_reads.clear()
        answer = call(function, method, path, who=ALICE, headers={"x-mind-id": "m_aaaaaaaaaaaa"}, **rest)
        assert answer["statusCode"] == 404, (function, answer.get("body"))
        assert answer["json"]["error"] == {"code": "not_found", "message": "No mind with that id."}
        assert mind_reads == ["GetItem"], function


def test_a_test_can_replace_the_mind_a_route_acts_in(aws: Any) -> None:
    # Given a memory in a mind that exists nowhere but in the test
    from synapse.http.caller import mind
    from synapse.services.memory import memories

    elsewhere = Mind(Space("alice", "m_bbbbbbbbbbbb"))
    who = Principal("alice", "user", frozenset(ALL_SCOPES))
    stored, _ = memories.put(who, elsewhere, MemoryIn(category=Category.fact, key="k", content="Oslo"))
    # And the history route, with its mind dependency replaced (Powertools' dependency_overrides)
    function = load_function("memory_history")
    # (Powertools calls the replacement with what the original depends on: here, the caller)
    function.app.dependency_overrides[mind] = lambda who: elsewhere
    # When alice asks for the memory's history without naming a mind
    event = http_event(
        "GET",
        f"/memory/{stored.id}/history",
        route="/memory/{id}/history",
        path_params={"id": stored.id},
        who=ALICE,
    )
    answer = function.handler(event, LambdaContext())
    # Then the route acted in the mind the test gave
    assert answer["statusCode"] == 200, answer["body"]
    assert [v["content"] for v in json.loads(answer["body"])["versions"]] == ["Oslo"]
    # And without the replacement it is the default mind's: no such memory there
    function.app.dependency_overrides.clear()
    assert function.handler(event, LambdaContext())["statusCode"] == 404
