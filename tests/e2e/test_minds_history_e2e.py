"""The "Done when" journey of the Minds and history issue, over real HTTP against `python -m local`.

A new user creates a second mind, gives an agent a Mind Key for it, sees that agent's memories kept
apart from the default mind's (recall, search, by-tag, ingest, identity, summaries); sees the history
of a memory an ingest changed and restores the old text; deletes the mind and its key stops working.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import requests

from tests.e2e.conftest import LocalServer

TIMEOUT = 60


def test_a_user_keeps_an_agents_mind_apart_sees_history_and_deletes_the_mind(
    local_server: LocalServer, jwt_for: Callable[..., str]
) -> None:
    url, me = local_server.url, f"u{uuid.uuid4().hex[:8]}"
    user = {"Authorization": f"Bearer {jwt_for(me)}"}

    def go(method: str, path: str, headers: dict[str, str], **kw: Any) -> requests.Response:
        return requests.request(method, url + path, headers=headers, timeout=TIMEOUT, **kw)

    # Given a second mind and a Mind Key for it
    mind = go("POST", "/minds", user, json={"name": "Support bot"}).json()
    made = go(
        "POST",
        "/keys",
        user,
        json={"name": "bot", "scopes": ["memory:read", "memory:write"], "mind_id": mind["mind_id"]},
    )
    assert made.status_code == 201 and made.json()["mind_id"] == mind["mind_id"]
    bot = {"Authorization": f"Bearer {made.json()['key']}"}
    # When the agent remembers and ingests in its mind, and the user writes the default one
    fact = {"category": "fact", "key": "queue", "content": "Tickets go to L2 after 24 h", "tags": ["tickets"]}
    assert go("POST", "/memory", bot, json=fact).json()["mind_id"] == mind["mind_id"]
    turn = {"sessionId": "s1", "messages": [{"role": "user", "content": "ผมชื่อสมชาย อยู่เชียงใหม่"}]}
    assert go("POST", "/memory/ingest", bot, json=turn).status_code == 200
    name = {"category": "identity", "key": "user_name", "content": "Michael Schäfer", "priority": "critical"}
    mine = go("POST", "/memory", user, json=name).json()
    # Then each mind sees its own: recall, search, by-tag, identity
    assert go("GET", "/memory/by-tag", user, params={"tag": "tickets"}).json()["memories"] == []
    assert [
        m["key"] for m in go("GET", "/memory/by-tag", bot, params={"tag": "tickets"}).json()["memories"]
    ] == ["queue"]
    assert go("GET", "/memory/search", user, params={"q": "tickets"}).json()["memories"] == []
    recalled = go("POST", "/memory/recall", bot, json={"query": "Michael Schäfer", "limit": 10}).json()
    assert mine["id"] not in [m["id"] for m in recalled["memories"]]
    assert "สมชาย" in go("GET", f"/memory/identity/{me}", bot).json()["identity"]
    assert "สมชาย" not in (go("GET", f"/memory/identity/{me}", user).json()["identity"] or "")
    there = {**user, "X-Mind-Id": mind["mind_id"]}
    assert go("GET", "/memory/recall", there).text.startswith("Mind: Support bot\n")
    assert go("GET", "/memory", {**bot, "X-Mind-Id": "default"}).status_code == 403

    # When an ingest in the default mind would change what the user said (and verified)
    changed = go(
        "POST",
        "/memory/ingest",
        user,
        json={"sessionId": "s2", "messages": [{"role": "user", "content": "My name is Somchai"}]},
    )
    # Then it is a proposal that awaits her (Review), and her memory is unchanged
    assert changed.status_code == 200 and changed.json()["overwrote_user"] == []
    [proposal] = changed.json()["proposed"]
    assert proposal["memory_id"] == mine["id"]
    assert go("GET", f"/memory/{mine['id']}", user).json()["content"] == "Michael Schäfer"
    # When she accepts it, the history keeps her text, and a restore brings it back as a new version
    accepted = go("POST", f"/memory/proposals/{proposal['proposal_id']}/accept", user)
    assert accepted.status_code == 200 and "Somchai" in accepted.json()["content"]
    versions = go("GET", f"/memory/{mine['id']}/history", user).json()["versions"]
    assert versions[-1]["content"] == "Michael Schäfer" and versions[0]["version"] == 2
    assert versions[0]["change"] == "accepted"
    back = go("POST", f"/memory/{mine['id']}/restore", user, json={"version": 1}).json()
    assert (back["content"], back["version"], back["source"]) == ("Michael Schäfer", 3, "user")

    # When the mind is deleted, its key stops working and its memories are gone
    assert go("DELETE", f"/minds/{mind['mind_id']}", user).status_code == 204
    assert go("GET", "/memory", bot).status_code == 401
    assert go("GET", "/memory", there).status_code == 404
    assert [m["mind_id"] for m in go("GET", "/minds", user).json()["minds"]] == ["default"]
