"""Supersession: a changed fact under another key hides the memory it replaces (like an expired one),
which stays readable by id, listed with include=superseded, and restorable. The Gemini double answers
the supersession; the rules keep their stable keys and supersede nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.gemini import GeminiDouble
from harness.lambdas import ALICE, agent
from synapse.ai.facts import RuleExtractor
from synapse.core.models.base import Role
from synapse.core.models.chat import ChatMessage
from tests.conftest import Call
from tests.integration.test_review import decide, get, on_id, pending

BERLIN = {"category": "identity", "key": "user_location", "content": "Lives in Berlin", "tags": ["home"]}
MOVE = "I moved from Berlin to Munich last month"


@pytest.fixture
def moving(gemini_double: GeminiDouble) -> GeminiDouble:
    """Gemini extracts the move under another key than the old city's, and says it supersedes it."""

    def generate(body: dict[str, Any]) -> str:
        return json.dumps(
            {
                "nuggets": [
                    {
                        "category": "identity",
                        "key": "home_city",
                        "content": "Lives in Munich",
                        "tags": ["home"],
                        "priority": "normal",
                        "confidence": 0.9,
                        "is_identity": True,
                        "supersedes": "identity/user_location",
                    }
                ]
            }
        )

    gemini_double.generate = generate
    return gemini_double


def ingest(call: Call, text: str) -> dict[str, Any]:
    body = {"sessionId": "s1", "messages": [{"role": "user", "content": text}]}
    answer = call("memory_ingest", "POST", "/memory/ingest", body=body, who=ALICE)
    assert answer["statusCode"] == 200, answer["body"]
    return dict(answer["json"])


def listed(call: Call, **query: str) -> list[str]:
    answer = call("memory_list", "GET", "/memory", query=query or None, who=ALICE)
    assert answer["statusCode"] == 200, answer["body"]
    return [m["id"] for m in answer["json"]["memories"]]


def everywhere(call: Call) -> dict[str, str]:
    """What every live view answers, as text (ids and contents)."""
    return {
        "list": json.dumps(call("memory_list", "GET", "/memory", who=ALICE)["json"]),
        "search": json.dumps(
            call("memory_search", "GET", "/memory/search", query={"q": "Berlin"}, who=ALICE)["json"]
        ),
        "by-tag": json.dumps(
            call("memory_by_tag", "GET", "/memory/by-tag", query={"tag": "home"}, who=ALICE)["json"]
        ),
        "recall": json.dumps(
            call("memory_recall", "POST", "/memory/recall", body={"query": "Berlin", "limit": 10}, who=ALICE)[
                "json"
            ]
        ),
        "recall text": call("memory_recall_text", "GET", "/memory/recall", who=ALICE)["body"],
        "context": json.dumps(
            call("memory_context", "POST", "/memory/context", body={"query": "where do I live"}, who=ALICE)[
                "json"
            ]
        ),
        "identity": json.dumps(
            call(
                "memory_identity",
                "GET",
                "/memory/identity/alice",
                route="/memory/identity/{userId}",
                path_params={"userId": "alice"},
                who=ALICE,
            )["json"]
        ),
    }


def test_a_fact_under_another_key_supersedes_the_old_one_in_every_live_view(
    call: Call, moving: GeminiDouble
) -> None:
    # Given an agent's (unverified) memory of where alice lives
    old = call("memory_create", "POST", "/memory", body=BERLIN, who=agent())["json"]
    assert all("Berlin" in text for text in everywhere(call).values())
    # When a conversation says she moved, and Gemini extracts it under another key, superseding the old
    out = ingest(call, MOVE)
    # Then the extractor was shown the related memory (not only the key list)
    prompt = json.dumps(moving.calls("generateContent")[-1].body, ensure_ascii=False)
    assert "most related" in prompt and "identity/user_location: Lives in Berlin" in prompt
    # And the new memory is written, and the old one is superseded by it (a version of its own)
    (new,) = out["nuggets"]
    assert new["key"] == "home_city" and out["proposed"] == []
    shown = get(call, old["id"])
    assert shown["statusCode"] == 200 and shown["json"]["superseded_by"] == new["id"]
    assert shown["json"]["version"] == old["version"] + 1 and shown["json"]["content"] == "Lives in Berlin"
    history = on_id(call, "memory_history", "GET", old["id"], "/history", who=ALICE)["json"]["versions"]
    assert history[0]["change"] == "superseded"
    # And no live view shows it any more; the list shows it with include=superseded
    for view, text in everywhere(call).items():
        assert "Berlin" not in text and old["id"] not in text, view
    assert old["id"] not in listed(call) and old["id"] in listed(call, include="superseded")
    assert new["id"] in listed(call)
    # When it is restored
    back = on_id(
        call, "memory_restore", "POST", old["id"], "/restore", body={"version": old["version"]}, who=ALICE
    )
    # Then it is live again
    assert back["statusCode"] == 200 and back["json"]["superseded_by"] is None
    assert old["id"] in listed(call)


def test_a_verified_memory_gets_a_supersede_proposal_instead(call: Call, moving: GeminiDouble) -> None:
    # Given alice's own (verified) city
    old = call("memory_create", "POST", "/memory", body=BERLIN, who=ALICE)["json"]
    # When the move is ingested
    out = ingest(call, MOVE)
    # Then nothing is written: the replacing memory waits in a supersede proposal
    assert out["nuggets"] == []
    (proposal,) = out["proposed"]
    assert (proposal["kind"], proposal["memory_id"], proposal["key"]) == ("supersede", old["id"], "home_city")
    assert proposal["proposed"]["content"] == "Lives in Munich"
    assert get(call, old["id"])["json"] == old
    assert listed(call) == [old["id"]]
    assert [p["proposal_id"] for p in pending(call)["json"]["proposals"]] == [proposal["proposal_id"]]
    # When alice accepts it
    accepted = decide(call, "accept", proposal["proposal_id"])
    # Then the new memory is hers (verified, change accepted) and the old one is superseded by it
    assert accepted["statusCode"] == 200, accepted["body"]
    new = accepted["json"]
    assert (new["key"], new["content"], new["verified"], new["source"]) == (
        "home_city",
        "Lives in Munich",
        True,
        "user",
    )
    assert get(call, old["id"])["json"]["superseded_by"] == new["id"]
    assert listed(call) == [new["id"]]


def test_without_a_supersession_both_memories_stay(call: Call, gemini_double: GeminiDouble) -> None:
    # (the control: the same nugget, without `supersedes`, leaves the old memory live)
    old = call("memory_create", "POST", "/memory", body=BERLIN, who=agent())["json"]
    gemini_double.generate = lambda body: json.dumps(
        {
            "nuggets": [
                {
                    "category": "identity",
                    "key": "home_city",
                    "content": "Lives in Munich",
                    "tags": [],
                    "priority": "normal",
                    "confidence": 0.9,
                    "is_identity": True,
                    "supersedes": "not a reference",
                }
            ]
        }
    )
    out = ingest(call, MOVE)
    assert [n["key"] for n in out["nuggets"]] == ["home_city"]
    assert get(call, old["id"])["json"]["superseded_by"] is None
    assert old["id"] in listed(call)


def test_the_rules_keep_their_stable_keys_and_supersede_nothing() -> None:
    said = [
        ChatMessage(role=Role.user, content="My name is Somchai and I live in Berlin"),
        ChatMessage(role=Role.user, content="I moved to Munich"),
        ChatMessage(role=Role.user, content="ผมชื่อสมชาย ย้ายไปอยู่เชียงใหม่แล้ว"),
    ]
    for message in said:
        for nugget in RuleExtractor().extract([message]):
            assert nugget.supersedes is None
    keys = {n.key for m in said for n in RuleExtractor().extract([m])}
    assert "user_name" in keys


def test_include_takes_only_superseded(call: Call) -> None:
    answer = call("memory_list", "GET", "/memory", query={"include": "everything"}, who=ALICE)
    assert answer["statusCode"] == 422 and answer["json"]["error"]["code"] == "validation_error"
