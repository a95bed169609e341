"""History: every write keeps the version it replaced; GET /memory/{id}/history and restore."""

from __future__ import annotations

from typing import Any

from harness.lambdas import ALICE, agent
from tests.conftest import Call

NAME = {
    "category": "identity",
    "key": "user_name",
    "content": "Michael Schäfer",
    "tags": ["person"],
    "priority": "critical",
}


def create(call: Call, body: dict[str, Any], who: dict[str, str] = ALICE) -> dict[str, Any]:
    return call("memory_create", "POST", "/memory", body=body, who=who)


def history(call: Call, mem_id: str, who: dict[str, str] = ALICE) -> dict[str, Any]:
    return call(
        "memory_history",
        "GET",
        f"/memory/{mem_id}/history",
        route="/memory/{id}/history",
        path_params={"id": mem_id},
        who=who,
    )


def restore(call: Call, mem_id: str, version: Any, who: dict[str, str] = ALICE) -> dict[str, Any]:
    return call(
        "memory_restore",
        "POST",
        f"/memory/{mem_id}/restore",
        route="/memory/{id}/restore",
        path_params={"id": mem_id},
        body={"version": version},
        who=who,
    )


def ingest(call: Call, text: str) -> dict[str, Any]:
    body = {"sessionId": "s1", "messages": [{"role": "user", "content": text}]}
    return call("memory_ingest", "POST", "/memory/ingest", body=body, who=ALICE)


def test_every_write_is_a_new_version_and_keeps_the_one_it_replaced(call: Call) -> None:
    # Given a memory created, updated by key, changed with PUT and verified
    first = create(call, NAME)["json"]
    mem_id = first["id"]
    second = create(call, {**NAME, "content": "Michael Schaefer"}, who=agent())["json"]
    path = {"route": "/memory/{id}", "path_params": {"id": mem_id}}
    third = call("memory_update", "PUT", f"/memory/{mem_id}", body={"tags": ["name"]}, who=agent(), **path)
    fourth = call(
        "memory_verify",
        "POST",
        f"/memory/{mem_id}/verify",
        route="/memory/{id}/verify",
        path_params={"id": mem_id},
        who=ALICE,
    )
    # Then each answer carries its version, and the history lists them all, the current first
    assert [first["version"], second["version"], third["json"]["version"], fourth["json"]["version"]] == [
        1,
        2,
        3,
        4,
    ]
    answer = history(call, mem_id)
    assert answer["statusCode"] == 200
    versions = answer["json"]["versions"]
    assert [(v["version"], v["change"]) for v in versions] == [
        (4, "verified"),
        (3, "updated"),
        (2, "updated"),
        (1, "created"),
    ]
    assert versions[-1]["content"] == "Michael Schäfer" and versions[-1]["source"] == "user"
    assert versions[-1]["verified"] is True and versions[-1]["priority"] == "critical"
    assert (
        versions[1]["tags"] == ["name"] and versions[1]["source"] == "agent" and not versions[1]["verified"]
    )
    assert set(versions[0]) == {
        "version",
        "content",
        "tags",
        "priority",
        "source",
        "verified",
        "confidence",
        "expires_at",
        "updated_at",
        "change",
        "valid_at",
    }


def test_an_ingest_that_changes_what_a_user_said_keeps_it_and_the_user_restores_it(call: Call) -> None:
    # Given the user's own name, critical and verified
    mine = create(call, NAME)["json"]
    # When a chat turn is extracted to the same key
    answer = ingest(call, "ผมชื่อสมชาย")
    # Then the ingest says it overwrote a user's memory, and the old text is in the history
    assert answer["statusCode"] == 200, answer
    assert answer["json"]["overwrote_user"] == [mine["id"]]
    changed = next(m for m in answer["json"]["nuggets"] if m["id"] == mine["id"])
    assert "สมชาย" in changed["content"] and changed["source"] == "agent" and changed["version"] == 2
    kept = history(call, mine["id"])["json"]["versions"]
    assert [(v["version"], v["content"]) for v in kept][-1] == (1, "Michael Schäfer")
    # When the user restores version 1
    back = restore(call, mine["id"], 1)
    # Then the memory has the old text again, as a new version written by the user
    assert back["statusCode"] == 200, back
    memory = back["json"]
    assert (memory["content"], memory["version"], memory["source"], memory["verified"]) == (
        "Michael Schäfer",
        3,
        "user",
        True,
    )
    assert memory["priority"] == "critical" and memory["tags"] == ["person"]
    assert history(call, mine["id"])["json"]["versions"][0]["change"] == "restored"
    # And the identity line follows the current version
    line = call(
        "memory_identity",
        "GET",
        "/memory/identity/alice",
        route="/memory/identity/{userId}",
        path_params={"userId": "alice"},
        who=ALICE,
    )["json"]["identity"]
    assert "Michael Schäfer" in line and "สมชาย" not in line


def test_an_ingest_over_agent_memories_names_none(call: Call) -> None:
    create(call, NAME, who=agent())
    assert ingest(call, "ผมชื่อสมชาย")["json"]["overwrote_user"] == []


def test_unknown_versions_and_memories_are_not_found(call: Call) -> None:
    mine = create(call, NAME)["json"]
    for version in (2, 99):
        answer = restore(call, mine["id"], version)
        assert answer["statusCode"] == 404 and answer["json"]["error"]["code"] == "not_found"
    missing = "6f1c0c2e-8f1e-5b7a-9c1d-0a7e4f2b9c11"
    assert history(call, missing)["statusCode"] == 404
    assert restore(call, missing, 1)["statusCode"] == 404
    # a version that is not a positive whole number is a 422
    for bad in (0, "1", 1.5, None):
        assert restore(call, mine["id"], bad)["statusCode"] == 422


def test_a_read_only_key_reads_history_and_cannot_restore(call: Call) -> None:
    mine = create(call, NAME)["json"]
    reader = agent(scopes="memory:read")
    assert history(call, mine["id"], who=reader)["statusCode"] == 200
    assert restore(call, mine["id"], 1, who=reader)["statusCode"] == 403


def test_the_last_fifty_versions_are_kept(call: Call) -> None:
    mine = create(call, NAME)["json"]
    for n in range(2, 57):
        create(call, {**NAME, "content": f"name {n}"})
    versions = history(call, mine["id"])["json"]["versions"]
    # the current one (56) and the fifty before it
    assert [v["version"] for v in versions] == list(range(56, 5, -1))


def test_deleting_a_memory_deletes_its_history_and_export_shows_history(call: Call) -> None:
    mine = create(call, NAME)["json"]
    create(call, {**NAME, "content": "Michael S."})
    exported = call("me_export", "GET", "/me/export", who=ALICE)["json"]
    assert [v["content"] for v in exported["history"][mine["id"]]] == ["Michael Schäfer"]
    path = {"route": "/memory/{id}", "path_params": {"id": mine["id"]}}
    assert call("memory_delete", "DELETE", f"/memory/{mine['id']}", who=ALICE, **path)["statusCode"] == 204
    assert call("me_export", "GET", "/me/export", who=ALICE)["json"]["history"] == {}
    # the same key again is a new memory: version 1, no history of the deleted one
    again = create(call, NAME)["json"]
    assert again["version"] == 1
    assert [v["version"] for v in history(call, again["id"])["json"]["versions"]] == [1]


def test_a_recall_never_reads_versions(call: Call) -> None:
    from synapse.store import nuggets
    from synapse.store.keys import Space

    mine = create(call, NAME)["json"]
    for n in range(5):
        create(call, {**NAME, "content": f"name {n}"})
    cols = nuggets.read_columns(Space("alice"))
    assert cols.ids == [mine["id"]]
