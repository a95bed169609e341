"""Minds: separate memory spaces of one user, Mind Keys bound to one of them, and their deletion."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from harness.lambdas import ALICE, LambdaContext, http_event, load_function, user
from tests.conftest import Call


def make_mind(call: Call, name: str, who: dict[str, str] = ALICE) -> dict[str, Any]:
    return call("minds_create", "POST", "/minds", body={"name": name}, who=who)


def mind_key(call: Call, mind_id: str, scopes: list[str] | None = None) -> dict[str, str]:
    """A Mind Key of alice's, through POST /keys; its principal as the authorizer gives it."""
    from synapse.services.account import auth

    made = call(
        "keys_create",
        "POST",
        "/keys",
        body={
            "name": f"bot of {mind_id}",
            "scopes": scopes or ["memory:read", "memory:write"],
            "mind_id": mind_id,
        },
        who=ALICE,
    )
    assert made["statusCode"] == 201, made
    assert made["json"]["mind_id"] == mind_id
    return auth.verify_api_key(made["json"]["key"]).context() | {"key": made["json"]["key"]}


def remember(
    call: Call, who: dict[str, str], content: str, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    body = {"category": "fact", "key": "favourite_city", "content": content, "tags": ["city"]}
    return call("memory_create", "POST", "/memory", body=body, who=who, headers=headers)


def listed(call: Call, who: dict[str, str], headers: dict[str, str] | None = None) -> dict[str, Any]:
    return call("memory_list", "GET", "/memory", who=who, headers=headers)


def test_a_mind_keeps_an_agents_memories_apart_from_the_default_minds(call: Call) -> None:
    # Given alice makes a second mind and gives an agent a Mind Key for it
    mind = make_mind(call, "Support bot")
    assert mind["statusCode"] == 201, mind
    mind_id = mind["json"]["mind_id"]
    assert mind_id.startswith("m_") and len(mind_id) == 14 and mind["json"]["name"] == "Support bot"
    bot = mind_key(call, mind_id)
    # When she and the agent store the same key, each in their own mind
    mine = remember(call, ALICE, "Berlin")
    theirs = remember(call, bot, "เชียงใหม่")
    # Then they are two memories, each in its mind
    assert mine["statusCode"] == theirs["statusCode"] == 201
    assert mine["json"]["id"] != theirs["json"]["id"]
    assert (mine["json"]["mind_id"], theirs["json"]["mind_id"]) == ("default", mind_id)
    # And each mind sees its own only; alice reaches the other mind with X-Mind-Id
    assert [m["content"] for m in listed(call, ALICE)["json"]["memories"]] == ["Berlin"]
    assert [m["content"] for m in listed(call, bot)["json"]["memories"]] == ["เชียงใหม่"]
    there = {"x-mind-id": mind_id}
    assert [m["content"] for m in listed(call, ALICE, there)["json"]["memories"]] == ["เชียงใหม่"]
    # a memory of one mind is 404 from another
    path = f"/memory/{theirs['json']['id']}"
    got = call(
        "memory_get", "GET", path, route="/memory/{id}", path_params={"id": theirs["json"]["id"]}, who=ALICE
    )
    assert got["statusCode"] == 404
    # recall and search are per mind too
    found = call("memory_recall", "POST", "/memory/recall", body={"query": "เชียงใหม่"}, who=bot)["json"]
    assert [m["text"] for m in found["memories"]] == ["เชียงใหม่"]
    found = call("memory_search", "GET", "/memory/search", query={"q": "Berlin"}, who=bot)["json"]
    assert found["memories"] == []
    text = call("memory_recall_text", "GET", "/memory/recall", who=bot)
    assert text["body"].startswith("Mind: Support bot\n")
    # GET /minds lists both, the default first, with their counts
    minds = call("minds_list", "GET", "/minds", who=ALICE)["json"]["minds"]
    assert [(m["mind_id"], m["name"], m["memories"]) for m in minds] == [
        ("default", "alice", 1),
        (mind_id, "Support bot", 1),
    ]


def test_ingest_identity_and_summaries_are_per_mind(call: Call) -> None:
    mind_id = make_mind(call, "Travel agent")["json"]["mind_id"]
    bot = mind_key(call, mind_id)
    body = {
        "sessionId": "s1",
        "messages": [{"role": "user", "content": "My name is Somchai and I live in Chiang Mai"}],
    }
    assert call("memory_ingest", "POST", "/memory/ingest", body=body, who=bot)["statusCode"] == 200
    summary = call("memory_summarize", "POST", "/memory/summarize", body={"sessionId": "s1"}, who=bot)
    assert summary["statusCode"] == 200

    def identity(who: dict[str, str], headers: dict[str, str] | None = None) -> Any:
        return call(
            "memory_identity",
            "GET",
            "/memory/identity/alice",
            route="/memory/identity/{userId}",
            path_params={"userId": "alice"},
            who=who,
            headers=headers,
        )["json"]["identity"]

    def chunks(who: dict[str, str]) -> list[Any]:
        return call(
            "memory_summaries",
            "GET",
            "/memory/summaries/s1",
            route="/memory/summaries/{sessionId}",
            path_params={"sessionId": "s1"},
            who=who,
        )["json"]["summaries"]

    assert "Somchai" in identity(bot) and "Somchai" in identity(ALICE, {"x-mind-id": mind_id})
    assert identity(ALICE) is None
    assert len(chunks(bot)) == 1 and chunks(ALICE) == []


def test_the_same_turns_sent_to_two_minds_are_two_ingests(call: Call) -> None:
    # Given the same turns of one user, sent within the hour to the default mind and to another one
    mind_id = make_mind(call, "Travel agent")["json"]["mind_id"]
    body = {
        "sessionId": "s1",
        "messages": [{"role": "user", "content": "My name is Somchai and I live in Chiang Mai"}],
    }
    first = call("memory_ingest", "POST", "/memory/ingest", body=body, who=ALICE)
    # When the second one arrives (the idempotency records of both are in alice's partition)
    second = call(
        "memory_ingest", "POST", "/memory/ingest", body=body, who=ALICE, headers={"x-mind-id": mind_id}
    )
    # Then each mind ingested them: the second answer is its own, not the first one replayed
    assert first["statusCode"] == second["statusCode"] == 200
    assert {m["mind_id"] for m in first["json"]["nuggets"]} == {"default"}
    assert {m["mind_id"] for m in second["json"]["nuggets"]} == {mind_id}
    assert listed(call, ALICE, {"x-mind-id": mind_id})["json"]["memories"]
    # And a retry in the second mind is still answered once
    again = call(
        "memory_ingest", "POST", "/memory/ingest", body=body, who=ALICE, headers={"x-mind-id": mind_id}
    )
    assert again["json"] == second["json"]


def test_a_mind_key_cannot_reach_another_mind_and_unknown_minds_are_not_found(call: Call) -> None:
    one = make_mind(call, "one")["json"]["mind_id"]
    two = make_mind(call, "two")["json"]["mind_id"]
    bot = mind_key(call, one)
    refused = listed(call, bot, {"x-mind-id": two})
    assert refused["statusCode"] == 403 and refused["json"]["error"]["code"] == "forbidden"
    assert listed(call, bot, {"x-mind-id": "default"})["statusCode"] == 403
    assert listed(call, bot, {"x-mind-id": one})["statusCode"] == 200
    for unknown in ("m_000000000000", "nope", "M_ABC"):
        answer = listed(call, ALICE, {"x-mind-id": unknown})
        assert answer["statusCode"] == 404 and answer["json"]["error"]["code"] == "not_found"
    # another user's mind is unknown to alice, and POST /keys refuses a mind that is not hers
    bobs = make_mind(call, "bob's", who=user("bob"))["json"]["mind_id"]
    assert listed(call, ALICE, {"x-mind-id": bobs})["statusCode"] == 404
    made = call(
        "keys_create",
        "POST",
        "/keys",
        body={"name": "x", "scopes": ["memory:read"], "mind_id": bobs},
        who=ALICE,
    )
    assert made["statusCode"] == 404


def test_mind_names_are_unique_per_user_whatever_their_case(call: Call) -> None:
    assert make_mind(call, "Work")["statusCode"] == 201
    for taken in ("work", "WORK", "alice", "Alice"):
        answer = make_mind(call, taken)
        assert answer["statusCode"] == 409 and answer["json"]["error"]["code"] == "conflict"
    assert make_mind(call, "work", who=user("bob"))["statusCode"] == 201


def test_deleting_a_mind_deletes_its_memories_and_its_keys_stop_working(call: Call) -> None:
    from synapse.core.errors import Unauthorized
    from synapse.services.account import auth

    mind_id = make_mind(call, "Temp")["json"]["mind_id"]
    bot = mind_key(call, mind_id)
    remember(call, bot, "Lisbon")
    remember(call, ALICE, "Berlin")
    gone = call(
        "minds_delete",
        "DELETE",
        f"/minds/{mind_id}",
        route="/minds/{mindId}",
        path_params={"mindId": mind_id},
        who=ALICE,
    )
    assert gone["statusCode"] == 204, gone
    try:
        auth.verify_api_key(bot["key"])
        raise AssertionError("a deleted mind's key still works")
    except Unauthorized:
        pass
    assert listed(call, ALICE, {"x-mind-id": mind_id})["statusCode"] == 404
    assert [m["content"] for m in listed(call, ALICE)["json"]["memories"]] == ["Berlin"]
    assert [m["mind_id"] for m in call("minds_list", "GET", "/minds", who=ALICE)["json"]["minds"]] == [
        "default"
    ]
    exported = call("me_export", "GET", "/me/export", who=ALICE)["json"]
    assert [m["content"] for m in exported["memories"]] == ["Berlin"]
    # the default mind cannot be deleted; an unknown one is 404
    for mid, status in (("default", 409), ("m_000000000000", 404)):
        answer = call(
            "minds_delete",
            "DELETE",
            f"/minds/{mid}",
            route="/minds/{mindId}",
            path_params={"mindId": mid},
            who=ALICE,
        )
        assert answer["statusCode"] == status


def test_export_and_delete_me_cover_every_mind(call: Call) -> None:
    mind_id = make_mind(call, "Side project")["json"]["mind_id"]
    remember(call, ALICE, "Berlin")
    remember(call, ALICE, "Lisbon", {"x-mind-id": mind_id})
    exported = call("me_export", "GET", "/me/export", who=ALICE)["json"]
    assert sorted((m["mind_id"], m["content"]) for m in exported["memories"]) == [
        ("default", "Berlin"),
        (mind_id, "Lisbon"),
    ]
    assert [(m["mind_id"], m["name"]) for m in exported["minds"]] == [(mind_id, "Side project")]
    name = {"category": "identity", "key": "user_name", "content": "Somchai"}
    call("memory_create", "POST", "/memory", body=name, who=ALICE, headers={"x-mind-id": mind_id})
    exported = call("me_export", "GET", "/me/export", who=ALICE)["json"]
    assert exported["identities"] == {mind_id: "Somchai"} and exported["identity"] is None
    assert call("me_delete", "DELETE", "/me", who=ALICE)["statusCode"] == 200
    assert call("me_export", "GET", "/me/export", who=ALICE)["json"]["memories"] == []
    assert [m["mind_id"] for m in call("minds_list", "GET", "/minds", who=ALICE)["json"]["minds"]] == [
        "default"
    ]


def test_the_default_mind_keeps_the_created_at_it_was_first_listed_with(
    call: Call, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a clock that moves an hour on every reading (it was a new created_at on every call)
    from synapse.services.account import minds as mind_service
    from synapse.store import minds as mind_store

    hours = iter(range(1000))

    def clock() -> datetime:
        return datetime(2026, 12, 1, tzinfo=UTC) + timedelta(hours=next(hours))

    monkeypatch.setattr(mind_store, "utcnow", clock)
    monkeypatch.setattr(mind_service, "utcnow", clock)

    def listed() -> dict[str, str]:
        answer = call("minds_list", "GET", "/minds", who=ALICE)
        assert answer["statusCode"] == 200
        return {m["mind_id"]: m["created_at"] for m in answer["json"]["minds"]}

    # When alice lists her minds, makes one, and lists them again, from two containers
    first = listed()["default"]
    mind_id = make_mind(call, "Travel")["json"]["mind_id"]
    again = listed()
    other_container = load_function("minds_list").handler(
        http_event("GET", "/minds", who=ALICE), LambdaContext()
    )
    # Then the default mind's created_at is the first one every time, and it stays first in the list
    assert list(again) == ["default", mind_id] and again["default"] == first == "2026-12-01T00:00:00Z"
    assert json.loads(other_container["body"])["minds"][0]["created_at"] == first
    # And the export lists the minds made, as before (the default mind's item is not one of them)
    exported = call("me_export", "GET", "/me/export", who=ALICE)["json"]
    assert [m["mind_id"] for m in exported["minds"]] == [mind_id]
    # And another user's default mind has its own
    assert call("minds_list", "GET", "/minds", who=user("bob"))["json"]["minds"][0]["created_at"] != first
