"""POST /memory/context: one call per chat turn — identity, recall, the latest summary, recent messages."""

from __future__ import annotations

from typing import Any

import pytest

from harness.lambdas import ALICE, agent
from tests.conftest import Call

THAI = [
    {"role": "user", "content": "สวัสดีครับ ผมชื่อสมชาย อยู่เชียงใหม่"},
    {"role": "assistant", "content": "ยินดีที่ได้รู้จักครับคุณสมชาย"},
    {"role": "user", "content": "ผมชอบกินข้าวซอยมาก"},
]
ENGLISH = [
    {"role": "user", "content": "I prefer dark theme in every editor"},
    {"role": "assistant", "content": "Noted, dark theme it is."},
    {"role": "user", "content": "I work at Acme as a data engineer"},
]


def context(call: Call, body: dict[str, Any], who: dict[str, str] = ALICE) -> dict[str, Any]:
    return call("memory_context", "POST", "/memory/context", body=body, who=who)


def ingest(call: Call, session: str, messages: list[dict[str, str]]) -> None:
    body = {"sessionId": session, "messages": messages}
    assert call("memory_ingest", "POST", "/memory/ingest", body=body, who=ALICE)["statusCode"] == 200


@pytest.mark.parametrize(
    ("session", "messages", "query"), [("th", THAI, "ผมชอบกินอะไร"), ("en", ENGLISH, "which theme?")]
)
def test_a_chat_turn_gets_identity_memories_summary_and_recent_messages(
    call: Call, session: str, messages: list[dict[str, str]], query: str
) -> None:
    # Given a session with stored turns and a summary
    ingest(call, session, messages)
    made = call("memory_summarize", "POST", "/memory/summarize", body={"sessionId": session}, who=ALICE)
    assert made["statusCode"] == 200
    # When the next turn asks for its context
    answer = context(call, {"sessionId": session, "query": query, "limit": 3, "recent": 2})
    # Then every part is there, and the memories are exactly what recall answers for that query
    assert answer["statusCode"] == 200, answer["body"]
    out = answer["json"]
    recalled = call("memory_recall", "POST", "/memory/recall", body={"query": query, "limit": 3}, who=ALICE)[
        "json"
    ]
    assert out["memories"] == recalled["memories"] and out["identity"] == recalled["identity"]
    assert out["summary"] == made["json"]["summary"]
    assert [(m["role"], m["content"]) for m in out["recent"]] == [
        (m["role"], m["content"]) for m in messages[-2:]
    ]
    # And the prompt holds the parts under their headings, in order
    prompt = out["prompt"]
    heads = ["Identity:", "Relevant memories:", "Session summary:", "Recent messages:"]
    assert [prompt.index(h) for h in heads] == sorted(prompt.index(h) for h in heads)
    assert out["identity"] in prompt and out["summary"] in prompt
    assert all(m["text"] in prompt for m in out["memories"])
    assert f"user: {messages[-1]['content']}" in prompt


def test_without_a_session_there_is_no_summary_nor_recent_and_empty_parts_leave_the_prompt(
    call: Call,
) -> None:
    # (the prompt's first line is the current time, whatever else there is: the Time issue)
    at = "2026-12-03T10:15:00Z"
    answer = context(call, {"query": "anything at all", "reference_time": at})
    assert answer["statusCode"] == 200, answer["body"]
    assert answer["json"] == {
        "identity": None,
        "memories": [],
        "summary": None,
        "recent": [],
        "prompt": "Current time: 2026-12-03 10:15 (UTC)",
    }
    call(
        "memory_create",
        "POST",
        "/memory",
        body={"category": "fact", "key": "pet", "content": "A dog named Mango"},
        who=ALICE,
    )
    out = context(call, {"query": "dog", "sessionId": "never-used", "reference_time": at})["json"]
    assert out["prompt"] == "Current time: 2026-12-03 10:15 (UTC)\n\nRelevant memories:\n- A dog named Mango"
    assert out["summary"] is None and out["recent"] == []


def test_recent_takes_the_last_messages_oldest_first(call: Call) -> None:
    ingest(
        call, "long", [{"role": "user", "content": f"message number {i} about the project"} for i in range(8)]
    )
    out = context(call, {"sessionId": "long", "query": "project", "recent": 3})["json"]
    assert [m["content"] for m in out["recent"]] == [
        f"message number {i} about the project" for i in (5, 6, 7)
    ]
    assert context(call, {"sessionId": "long", "query": "project", "recent": 0})["json"]["recent"] == []


@pytest.mark.parametrize(
    "body",
    [
        {"query": ""},
        {"query": "x", "limit": 0},
        {"query": "x", "limit": 21},
        {"query": "x", "recent": 21},
        {"query": "x", "limit": "3"},
        {"query": "x", "sessionId": "a:b"},
        {"query": "a\u0000b"},
    ],
)
def test_bad_bodies_are_422(call: Call, body: dict[str, Any]) -> None:
    answer = context(call, body)
    assert answer["statusCode"] == 422 and answer["json"]["error"]["code"] == "validation_error"


def test_a_read_only_key_gets_context_and_only_its_own_users(call: Call) -> None:
    assert context(call, {"query": "x"}, who=agent(scopes="memory:read"))["statusCode"] == 200
    assert context(call, {"query": "x", "userId": "bob"})["statusCode"] == 403
