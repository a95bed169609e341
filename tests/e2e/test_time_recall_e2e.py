"""Recall knows time, through the local server over HTTP as a client uses it: a Thai and an English
user's dated memories, questions naming a period ("เมื่อวาน", "last week"), the context prompt's time
and dates in Bangkok, `as_of` on recall, context, GET /memory/{id} and GET /memory, and the MCP tools.

The dated memories are written with `POST /memory`'s `valid_at` (API.md, "Memories carry when they
were true"); where a server does not store it, the tests that need it say so and skip.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import requests

from tests.e2e.conftest import LocalServer
from tests.e2e.test_mcp_e2e import connect, run, text_of

BKK, LA = "Asia/Bangkok", "America/Los_Angeles"
ASKED_BKK = "2026-12-03T20:00:00Z"  # 03:00 on Friday 4 December in Bangkok
ASKED_LA = "2026-12-02T18:00:00Z"  # 10:00 on Wednesday 2 December in Los Angeles


class Client:
    def __init__(self, server: LocalServer) -> None:
        self.url = server.url
        self.token = server.make_jwt(f"time-{uuid.uuid4().hex[:8]}")
        self.headers = {"Authorization": f"Bearer {self.token}", "content-type": "application/json"}

    def post(self, path: str, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
        answer = requests.post(f"{self.url}{path}", headers=self.headers, json=body, timeout=60)
        assert answer.status_code == status, answer.text
        out: dict[str, Any] = answer.json() if answer.content else {}
        return out

    def get(self, path: str, status: int = 200, **params: str) -> dict[str, Any]:
        answer = requests.get(f"{self.url}{path}", headers=self.headers, params=params, timeout=60)
        assert answer.status_code == status, answer.text
        out: dict[str, Any] = answer.json()
        return out

    def remember(self, key: str, content: str, valid_at: str | None = None) -> dict[str, Any]:
        body = {"category": "context", "key": key, "content": content}
        if valid_at:
            body["valid_at"] = valid_at
        answer = requests.post(f"{self.url}/memory", headers=self.headers, json=body, timeout=60)
        assert answer.status_code in (200, 201), answer.text
        memory: dict[str, Any] = answer.json()
        if valid_at:  # (POST /memory keeps the valid_at it is given: a server that drops it fails here)
            assert memory.get("valid_at") is not None, answer.text
        return memory


def remember_a_thai_week(nok: Client) -> None:
    """A Thai user's memories around the end of 3 December, Bangkok time (a mind of two memories is
    too small a test: min-max normalized relevance then makes one of two unrelated texts 'relevant')."""
    nok.remember("dentist", "ไปหาหมอฟัน ถอนฟันคุด", "2026-12-03T16:30:00Z")  # 23:30 on 3 Dec in Bangkok
    nok.remember("gym", "ไปยิม เล่นขา", "2026-12-03T17:30:00Z")  # 00:30 on 4 Dec in Bangkok
    nok.remember("cafe", "ไปคาเฟ่กับพี่ต้น", "2026-12-02T10:00:00Z")
    nok.remember("move", "ย้ายบ้านไปเชียงใหม่", "2026-03-14T03:00:00Z")


def keys(answer: dict[str, Any]) -> list[str]:
    return [m["key"] for m in answer["memories"]]


def test_a_thai_user_asks_what_she_did_yesterday_in_bangkok(local_server: LocalServer) -> None:
    nok = Client(local_server)
    # Given a Thai user's memories around the end of 3 December, Bangkok time
    remember_a_thai_week(nok)
    # When she asks at 03:00 on 4 December what she did yesterday
    asked = {"query": "เมื่อวานทำอะไร", "limit": 4, "reference_time": ASKED_BKK, "timezone": BKK}
    found = nok.post("/memory/recall", asked)
    # Then yesterday's memory (the local day, not the UTC one) comes first, with when it was true
    assert keys(found)[0] == "dentist"
    assert found["memories"][0]["valid_at"] == "2026-12-03T16:30:00Z"
    # and the chat prompt starts with the time in Bangkok and dates the memories there
    prompt = nok.post("/memory/context", {**asked, "limit": 2})["prompt"].splitlines()
    assert prompt[0] == "Current time: 2026-12-04 03:00 (Asia/Bangkok)"
    assert prompt[prompt.index("Relevant memories:") + 1] == "- (2026-12-03) ไปหาหมอฟัน ถอนฟันคุด"


def test_an_english_user_asks_what_he_did_last_week_in_los_angeles(local_server: LocalServer) -> None:
    dan = Client(local_server)
    dan.remember("climb_1126", "Climbing session at the bouldering gym, sent a V4", "2026-11-26T17:00:00Z")
    dan.remember(
        "climb_1119", "Climbing session at the bouldering gym, worked on a V5", "2026-11-19T17:00:00Z"
    )
    dan.remember("movie_1129", "Watched Dune Part Two at home with Maya", "2026-11-30T05:00:00Z")
    dan.remember("run_1130", "Ran 10 km along the waterfront", "2026-11-30T16:00:00Z")
    asked = {
        "query": "How did climbing go last week?",
        "limit": 4,
        "reference_time": ASKED_LA,
        "timezone": LA,
    }
    assert keys(dan.post("/memory/recall", asked))[0] == "climb_1126"
    week = dan.post("/memory/recall", {**asked, "query": "What did I do last week?"})
    assert set(keys(week)[:2]) == {"climb_1126", "movie_1129"}  # Sunday evening in LA is last week
    # a query naming no period ranks as it always did: the reference time changes nothing
    plain = {"query": "climbing at the bouldering gym", "limit": 4}
    assert dan.post("/memory/recall", plain) == dan.post(
        "/memory/recall", {**plain, "reference_time": ASKED_LA}
    )


def test_as_of_shows_what_the_mind_held_then(local_server: LocalServer) -> None:
    ann = Client(local_server)
    # Given a memory written, then changed a few seconds later
    first = ann.remember("home_city", "I live in Bangkok, in Ari")
    time.sleep(1.2)
    between = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    time.sleep(1.2)
    requests.put(
        f"{ann.url}/memory/{first['id']}",
        headers=ann.headers,
        json={"content": "I moved to Chiang Mai, near Nimman"},
        timeout=60,
    ).raise_for_status()
    ann.remember("pet", "A cat called Som-O")  # created after `between`
    # When the mind is read as of the moment between
    then = ann.get(f"/memory/{first['id']}", as_of=between)
    listed = ann.get("/memory", as_of=between)["memories"]
    recalled = ann.post("/memory/recall", {"query": "where do I live", "as_of": between})
    context = ann.post("/memory/context", {"query": "where do I live", "as_of": between})
    # Then each view holds the first version, and nothing created later
    assert then["content"] == "I live in Bangkok, in Ari" and then["version"] == 1
    assert [(m["key"], m["content"]) for m in listed] == [("home_city", "I live in Bangkok, in Ari")]
    assert [m["text"] for m in recalled["memories"]] == ["I live in Bangkok, in Ari"]
    assert "- I live in Bangkok, in Ari" in context["prompt"].splitlines()
    # and now, the current version
    assert ann.get(f"/memory/{first['id']}")["content"] == "I moved to Chiang Mai, near Nimman"
    # a deleted memory is gone as of any moment
    requests.delete(f"{ann.url}/memory/{first['id']}", headers=ann.headers, timeout=60).raise_for_status()
    ann.get(f"/memory/{first['id']}", status=404, as_of=between)
    assert ann.get("/memory", as_of=between)["memories"] == []
    # and a bad as_of is a 422 in the envelope
    bad = ann.get("/memory", status=422, as_of="last tuesday")
    assert bad["error"]["details"][0]["loc"] == ["query", "as_of"]


def test_the_mcp_tools_read_periods_and_show_dates(local_server: LocalServer) -> None:
    nok = Client(local_server)
    remember_a_thai_week(nok)
    args = {"query": "เมื่อวานทำอะไร", "limit": 2, "reference_time": ASKED_BKK, "timezone": BKK}

    async def tools() -> tuple[str, str]:
        async with connect(local_server, nok.token) as mcp:
            listed = {t.name: t for t in (await mcp.list_tools()).tools}
            for name in ("recall", "context"):
                assert {"reference_time", "timezone", "as_of"} <= set(listed[name].input_schema["properties"])
            recalled = await mcp.call_tool("recall", args)
            context = await mcp.call_tool("context", args)
            assert not recalled.is_error and not context.is_error
            return text_of(recalled), text_of(context)

    recalled, context = run(tools())
    assert recalled.splitlines()[0].startswith("- [context/dentist] ไปหาหมอฟัน ถอนฟันคุด (2026-12-03, score")
    assert context.splitlines()[0] == "Current time: 2026-12-04 03:00 (Asia/Bangkok)"
    assert "- (2026-12-03) ไปหาหมอฟัน ถอนฟันคุด" in context.splitlines()
