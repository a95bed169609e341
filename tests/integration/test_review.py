"""Review: an agent never changes what a person verified without that person's yes.

Every way an agent writes (POST /memory by key, PUT, DELETE, restore, ingest, MCP remember and
forget) is driven against a verified memory: the memory stays as it was, a proposal is recorded and
answered (202), and only a person's accept changes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harness.lambdas import ALICE, agent, user
from synapse.store.keys import Space
from tests.conftest import TABLE, Call
from tests.integration.test_auth_matrix import snapshot
from tests.integration.test_mcp import text, tool

NAME = {
    "category": "identity",
    "key": "user_name",
    "content": "Michael Schäfer",
    "tags": ["person"],
    "priority": "critical",
}


def create(call: Call, body: dict[str, Any], who: dict[str, str] = ALICE) -> dict[str, Any]:
    return call("memory_create", "POST", "/memory", body=body, who=who)


def get(call: Call, mem_id: str, who: dict[str, str] = ALICE) -> dict[str, Any]:
    return call(
        "memory_get", "GET", f"/memory/{mem_id}", route="/memory/{id}", path_params={"id": mem_id}, who=who
    )


def on_id(call: Call, function: str, method: str, mem_id: str, suffix: str = "", **kw: Any) -> dict[str, Any]:
    route = "/memory/{id}" + suffix
    return call(function, method, f"/memory/{mem_id}{suffix}", route=route, path_params={"id": mem_id}, **kw)


def pending(call: Call, who: dict[str, str] = ALICE, **query: str) -> dict[str, Any]:
    return call("memory_proposals", "GET", "/memory/proposals", query=query or None, who=who)


def decide(call: Call, verb: str, proposal_id: str, who: dict[str, str] = ALICE, **kw: Any) -> dict[str, Any]:
    return call(
        f"proposal_{verb}",
        "POST",
        f"/memory/proposals/{proposal_id}/{verb}",
        route="/memory/proposals/{proposalId}/" + verb,
        path_params={"proposalId": proposal_id},
        who=who,
        **kw,
    )


def ingest(call: Call, text_: str, who: dict[str, str] = ALICE) -> dict[str, Any]:
    body = {"sessionId": "s1", "messages": [{"role": "user", "content": text_}]}
    return call("memory_ingest", "POST", "/memory/ingest", body=body, who=who)


@pytest.fixture
def verified(call: Call) -> dict[str, Any]:
    """Alice's own memory (a person's write: verified), as answered."""
    answer = create(call, NAME)
    assert answer["statusCode"] == 201 and answer["json"]["verified"] is True
    return dict(answer["json"])


# --- each agent path, against a verified memory ----------------------------------------------------

Path = Callable[[Call, dict[str, Any]], dict[str, Any]]


def _post(call: Call, m: dict[str, Any]) -> dict[str, Any]:
    answer = create(call, {**NAME, "content": "ชื่อ สมชาย"}, who=agent())
    assert answer["statusCode"] == 202, answer["body"]
    return dict(answer["json"]["proposal"])


def _put(call: Call, m: dict[str, Any]) -> dict[str, Any]:
    answer = on_id(call, "memory_update", "PUT", m["id"], body={"content": "ชื่อ สมชาย"}, who=agent())
    assert answer["statusCode"] == 202, answer["body"]
    return dict(answer["json"]["proposal"])


def _delete(call: Call, m: dict[str, Any]) -> dict[str, Any]:
    answer = on_id(call, "memory_delete", "DELETE", m["id"], who=agent())
    assert answer["statusCode"] == 202, answer["body"]
    return dict(answer["json"]["proposal"])


def _restore(call: Call, m: dict[str, Any]) -> dict[str, Any]:
    answer = on_id(call, "memory_restore", "POST", m["id"], "/restore", body={"version": 1}, who=agent())
    assert answer["statusCode"] == 202, answer["body"]
    return dict(answer["json"]["proposal"])


def _ingest(call: Call, m: dict[str, Any]) -> dict[str, Any]:
    answer = ingest(call, "My name is Somchai")
    assert answer["statusCode"] == 200, answer["body"]
    out = answer["json"]
    # the verified memory is left out of the nuggets, and nothing a person said was overwritten
    assert m["id"] not in [n["id"] for n in out["nuggets"]]
    assert out["overwrote_user"] == []
    assert [p["memory_id"] for p in out["proposed"]] == [m["id"]]
    return dict(out["proposed"][0])


def _remember(call: Call, m: dict[str, Any]) -> dict[str, Any]:
    result = tool(call, "remember", {**NAME, "content": "ชื่อ สมชาย"}, who=agent())
    assert result.get("isError") is not True
    assert "awaits a person" in text(result) and "verified by the user" in text(result)
    return dict(result["structuredContent"]["proposal"])


def _forget(call: Call, m: dict[str, Any]) -> dict[str, Any]:
    result = tool(call, "forget", {"id": m["id"]}, who=agent())
    assert result.get("isError") is not True
    assert "awaits a person" in text(result)
    return dict(result["structuredContent"]["proposal"])


def _batch(call: Call, m: dict[str, Any]) -> dict[str, Any]:
    # (beside a new memory of another key, which is written as it would be alone)
    items = [{**NAME, "content": "ชื่อ สมชาย"}, {"category": "note", "key": "batch_other", "content": "x"}]
    answer = call("memory_batch", "POST", "/memory/batch", body={"memories": items}, who=agent())
    assert answer["statusCode"] == 200, answer["body"]
    held, other = answer["json"]["results"]
    assert held["status"] == 202 and "memory" not in held, held
    assert other["status"] == 201 and other["memory"]["verified"] is False, other
    return dict(held["proposal"])


PATHS: dict[str, tuple[Path, str]] = {
    "POST /memory/batch": (_batch, "update"),
    "POST /memory": (_post, "update"),
    "PUT /memory/{id}": (_put, "update"),
    "DELETE /memory/{id}": (_delete, "delete"),
    "POST /memory/{id}/restore": (_restore, "update"),
    "POST /memory/ingest": (_ingest, "update"),
    "MCP remember": (_remember, "update"),
    "MCP forget": (_forget, "delete"),
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_an_agent_path_against_a_verified_memory_proposes_and_changes_nothing(
    path: str, call: Call, verified: dict[str, Any]
) -> None:
    # Given alice's verified name (for restore: one more version of her own, so there is one to go back to)
    if path == "POST /memory/{id}/restore":
        verified = create(call, {**NAME, "content": "Michael S."})["json"]
    # When an agent changes or deletes it along this path
    make, kind = PATHS[path]
    proposal = make(call, verified)
    # Then the answer is a proposal on that memory, at the version the agent saw
    assert proposal["memory_id"] == verified["id"] and proposal["kind"] == kind
    assert proposal["base_version"] == verified["version"] and proposal["source"] == "agent"
    assert (proposal["proposed"] is None) is (kind == "delete")
    # And the memory is exactly as alice verified it
    assert get(call, verified["id"])["json"] == verified
    # And alice sees the proposal pending
    assert [p["proposal_id"] for p in pending(call)["json"]["proposals"]] == [proposal["proposal_id"]]
    # When alice accepts it
    answer = decide(call, "accept", proposal["proposal_id"])
    # Then (only now) the memory changes: a new version of hers, or gone
    if kind == "delete":
        assert answer["statusCode"] == 204
        assert get(call, verified["id"])["statusCode"] == 404
    else:
        assert answer["statusCode"] == 200, answer["body"]
        memory = answer["json"]
        assert memory["content"] == proposal["proposed"]["content"] != verified["content"]
        assert memory["version"] == verified["version"] + 1
        assert (memory["verified"], memory["source"]) == (True, "user")
        history = on_id(call, "memory_history", "GET", verified["id"], "/history", who=ALICE)["json"][
            "versions"
        ]
        assert history[0]["change"] == "accepted"
    # And the proposal is gone
    assert pending(call)["json"]["proposals"] == []


def test_a_decline_leaves_the_memory_as_verified_and_the_proposal_gone(
    call: Call, verified: dict[str, Any]
) -> None:
    proposal = _put(call, verified)
    answer = decide(call, "decline", proposal["proposal_id"])
    assert answer["statusCode"] == 204 and answer["body"] in ("", None)
    assert get(call, verified["id"])["json"] == verified
    assert pending(call)["json"]["proposals"] == []
    # and deciding again: the proposal is unknown
    for verb in ("accept", "decline"):
        again = decide(call, verb, proposal["proposal_id"])
        assert again["statusCode"] == 404 and again["json"]["error"]["code"] == "not_found"


def test_accept_takes_the_persons_edits(call: Call, verified: dict[str, Any]) -> None:
    proposal = _put(call, verified)
    edits = {"content": "Michael 'Micha' Schäfer", "tags": ["person", "nickname"], "priority": "high"}
    answer = decide(call, "accept", proposal["proposal_id"], body=edits)
    assert answer["statusCode"] == 200, answer["body"]
    memory = answer["json"]
    assert (memory["content"], memory["tags"], memory["priority"]) == (
        edits["content"],
        ["person", "nickname"],
        "high",
    )
    assert memory["verified"] is True and memory["confidence"] == 1.0


def test_a_stale_base_version_is_a_conflict_and_changes_nothing(
    call: Call, aws: Any, verified: dict[str, Any]
) -> None:
    # Given a proposal, and then alice changes the memory herself
    proposal = _put(call, verified)
    mine = create(call, {**NAME, "content": "Michael Schaefer"})["json"]
    before = snapshot(aws)
    # When she accepts the (now stale) proposal: 409, nothing written
    answer = decide(call, "accept", proposal["proposal_id"])
    assert answer["statusCode"] == 409 and answer["json"]["error"]["code"] == "conflict"
    assert snapshot(aws) == before
    assert get(call, verified["id"])["json"] == mine
    # And she can still decline it
    assert decide(call, "decline", proposal["proposal_id"])["statusCode"] == 204


def review_off(aws: Any, user_id: str = "alice") -> None:
    """The default mind's item with review_agent_changes false (what PATCH /minds/{mindId} stores)."""
    aws.put_item(
        TableName=TABLE,
        Item={
            "pk": {"S": f"mem:{user_id}"},
            "sk": {"S": "mind:default"},
            "created_at": {"S": "2026-12-01T00:00:00Z"},
            "review_agent_changes": {"BOOL": False},
        },
    )


def test_agents_write_as_before_on_unverified_memories_and_when_review_is_off(
    call: Call, aws: Any, verified: dict[str, Any]
) -> None:
    # An agent's own (unverified) memory: its update is a plain update
    mine = create(call, {"category": "fact", "key": "k", "content": "one"}, who=agent())["json"]
    again = create(call, {"category": "fact", "key": "k", "content": "two"}, who=agent())
    assert again["statusCode"] == 200 and again["json"]["version"] == mine["version"] + 1
    # A mind with review_agent_changes false: the agent overwrites the verified memory (second release)
    review_off(aws)
    answer = on_id(call, "memory_update", "PUT", verified["id"], body={"content": "ชื่อ สมชาย"}, who=agent())
    assert answer["statusCode"] == 200
    assert answer["json"]["verified"] is False and answer["json"]["content"] == "ชื่อ สมชาย"
    assert pending(call)["json"]["proposals"] == []


def test_proposals_are_for_people_and_of_their_own_minds(call: Call, verified: dict[str, Any]) -> None:
    proposal = _put(call, verified)
    # an agent may not list, accept or decline
    assert pending(call, who=agent())["statusCode"] == 403
    assert decide(call, "accept", proposal["proposal_id"], who=agent())["statusCode"] == 403
    # another user does not see it, and cannot decide it
    assert pending(call, who=user("bob"))["json"]["proposals"] == []
    for verb in ("accept", "decline"):
        assert decide(call, verb, proposal["proposal_id"], who=user("bob"))["statusCode"] == 404
    # alice's other mind does not hold it
    mind = call("minds_create", "POST", "/minds", body={"name": "work"}, who=ALICE)["json"]["mind_id"]
    other = call("memory_proposals", "GET", "/memory/proposals", headers={"X-Mind-Id": mind}, who=ALICE)
    assert other["json"]["proposals"] == []
    # and it is still pending for alice
    assert len(pending(call)["json"]["proposals"]) == 1


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"content": ""}, "content"),
        ({"confidence": 2}, "confidence"),
        ({"priority": "urgent"}, "priority"),
        ({"tags": ["ok", ""]}, "tags"),
    ],
)
def test_bad_edits_are_422_and_change_nothing(
    call: Call, aws: Any, verified: dict[str, Any], body: dict[str, Any], loc: str
) -> None:
    proposal = _put(call, verified)
    before = snapshot(aws)
    answer = decide(call, "accept", proposal["proposal_id"], body=body)
    assert answer["statusCode"] == 422 and answer["json"]["error"]["code"] == "validation_error"
    assert loc in str(answer["json"]["error"]["details"])
    assert snapshot(aws) == before


def test_bad_ids_and_cursors(call: Call) -> None:
    for bad in ("nope", "0" * 20, "../x"):
        assert decide(call, "decline", bad)["statusCode"] == 404
    answer = pending(call, cursor="not-a-cursor")
    assert answer["statusCode"] == 422
    assert pending(call, limit="0")["statusCode"] == 422


def test_proposals_page_newest_first(call: Call, verified: dict[str, Any]) -> None:
    made = [_put(call, verified)["proposal_id"] for _ in range(3)]
    first = pending(call, limit="2")["json"]
    assert [p["proposal_id"] for p in first["proposals"]] == made[::-1][:2]
    rest = pending(call, limit="2", cursor=first["next_cursor"])["json"]
    assert [p["proposal_id"] for p in rest["proposals"]] == made[:1] and rest["next_cursor"] is None


def test_a_proposal_is_an_event_in_the_change_log(call: Call, verified: dict[str, Any]) -> None:
    from synapse.store import changelog

    proposal = _put(call, verified)
    version = changelog.read(Space("alice"))
    entry = changelog.after(Space("alice"), version.seq - 1, 10).entries[-1]
    assert [(c.kind, c.proposal_id, c.memory_id) for c in entry.changes] == [
        ("proposal.created", proposal["proposal_id"], verified["id"])
    ]


def test_a_memory_keeps_at_most_20_pending_proposals_the_oldest_dropped(
    call: Call, verified: dict[str, Any]
) -> None:
    made = []
    for i in range(21):
        answer = on_id(
            call, "memory_update", "PUT", verified["id"], body={"content": f"try {i}"}, who=agent()
        )
        made.append(answer["json"]["proposal"]["proposal_id"])
    listed = [p["proposal_id"] for p in pending(call, limit="100")["json"]["proposals"]]
    assert listed == made[1:][::-1]  # 20, newest first; the first one dropped
    assert decide(call, "decline", made[0])["statusCode"] == 404
