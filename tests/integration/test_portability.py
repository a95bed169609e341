"""Batches, import and quotas (API.md "Batches, import, export and quotas"), through the handlers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.lambdas import ALICE, LambdaContext, agent, http_event, load_function, user
from synapse.core.config import settings
from synapse.store import changelog, db
from synapse.store.keys import VERSION_TOKEN, Space
from tests.conftest import Call

MEM0_FILE = Path(__file__).resolve().parents[1] / "data" / "mem0_get_all.json"
BOB = user("bob")


def fact(key: str, content: str | None = None, **more: Any) -> dict[str, Any]:
    return {"category": "fact", "key": key, "content": content or f"The fact called {key}", **more}


def batch(call: Call, items: list[Any], who: dict[str, str] = ALICE) -> dict[str, Any]:
    return call("memory_batch", "POST", "/memory/batch", body={"memories": items}, who=who)


def import_(call: Call, fmt: str, records: list[Any], who: dict[str, str] = ALICE) -> dict[str, Any]:
    return call("memory_import", "POST", "/memory/import", body={"format": fmt, "records": records}, who=who)


def listed(call: Call, who: dict[str, str] = ALICE) -> list[dict[str, Any]]:
    return call("memory_list", "GET", "/memory", query={"limit": "100"}, who=who)["json"]["memories"]


def seq(user_id: str = "alice") -> int:
    return changelog.read(Space(user_id, "default")).seq


def export(call: Call, who: dict[str, str]) -> dict[str, Any]:
    answer = call("me_export", "GET", "/me/export", who=who)
    assert answer["statusCode"] == 200, answer
    return answer["json"]


# --- POST /memory/batch -------------------------------------------------------------------------------


def test_a_batch_answers_each_item_as_alone_and_writes_the_valid_ones(call: Call) -> None:
    # Given a batch with invalid items among valid ones, and one item updating an existing memory
    assert (
        call("memory_create", "POST", "/memory", body=fact("city", "Lives in Lyon"), who=ALICE)["statusCode"]
        == 201
    )
    items = [
        fact("pet", "Has a cat called Miso"),
        {"category": "fact", "key": "Not A Key", "content": "bad key"},
        fact("city", "Lives in Chiang Mai"),
        "not an object",
        {**fact("other"), "userId": "bob"},
        fact("tea", "Drinks green tea", tags=["drinks"], priority="high"),
    ]
    before = seq()
    # When it is sent
    answer = batch(call, items)
    # Then each item has the status POST /memory would answer it alone, in order
    assert answer["statusCode"] == 200, answer
    results = answer["json"]["results"]
    assert [r["status"] for r in results] == [201, 422, 200, 422, 403, 201]
    assert results[0]["memory"]["content"] == "Has a cat called Miso" and "error" not in results[0]
    assert results[2]["memory"]["version"] == 2 and results[2]["memory"]["content"] == "Lives in Chiang Mai"
    bad = results[1]["error"]["error"]
    assert bad["code"] == "validation_error" and bad["details"][0]["loc"] == ["body", "key"]
    assert "memory" not in results[1]
    assert results[3]["error"]["error"]["code"] == "validation_error"
    assert results[4]["error"]["error"]["code"] == "forbidden"
    assert results[5]["memory"]["tags"] == ["drinks"] and results[5]["memory"]["priority"] == "high"
    # And only the valid items were written, with ONE turn of the mind's change-log counter
    assert {m["key"] for m in listed(call)} == {"pet", "city", "tea"}
    assert seq() == before + 1
    changes = call("memory_changes", "GET", "/memory/changes", query={"after": str(before)}, who=ALICE)[
        "json"
    ]
    assert {c["seq"] for c in changes["changes"]} == {before + 1}
    assert sorted(c["change"] for c in changes["changes"]) == ["created", "created", "updated"]


def test_a_batch_of_100_is_one_turn_of_the_counter_and_idempotent(call: Call) -> None:
    # Given 100 new memories (more actions than one transaction holds beside the version step)
    items = [fact(f"k{i:03d}", f"Fact number {i}") for i in range(100)]
    before = seq()
    # When they are sent as one batch
    first = batch(call, items)
    # Then all are created, the counter moved once, and the change log names all 100 at that seq
    assert [r["status"] for r in first["json"]["results"]] == [201] * 100
    assert seq() == before + 1
    entry = changelog.after(Space("alice", "default"), before, 1000).entries
    assert len(entry) == 1 and len(entry[0].memory_changes()) == 100
    # When the same batch is sent again (updates: 2 actions each, 200 in all)
    again = batch(call, items)
    # Then each is an update of the same memory (no duplicate), again one turn of the counter
    assert [r["status"] for r in again["json"]["results"]] == [200] * 100
    assert {r["memory"]["version"] for r in again["json"]["results"]} == {2}
    assert seq() == before + 2
    assert len(listed(call)) == 100


def test_the_same_key_twice_in_a_batch_is_a_create_then_an_update(call: Call) -> None:
    answer = batch(call, [fact("dup", "first"), fact("dup", "second")])
    results = answer["json"]["results"]
    assert [r["status"] for r in results] == [201, 200]
    assert results[1]["memory"]["version"] == 2
    assert [m["content"] for m in listed(call)] == ["second"]


@pytest.mark.parametrize(
    "body",
    [
        {"memories": []},
        {"memories": [fact(f"x{i}") for i in range(101)]},
        {"memories": {"category": "fact"}},
        {},
    ],
    ids=["empty", "101", "not-a-list", "missing"],
)
def test_a_bad_batch_is_a_422_envelope_and_changes_nothing(call: Call, body: dict[str, Any]) -> None:
    answer = call("memory_batch", "POST", "/memory/batch", body=body, who=ALICE)
    assert answer["statusCode"] == 422, answer
    assert answer["json"]["error"]["code"] == "validation_error"
    assert listed(call) == [] and seq() == 0


def test_an_agent_batch_writes_as_an_agent(call: Call) -> None:
    results = batch(call, [fact("a"), fact("b", confidence=0.9)], who=agent())["json"]["results"]
    assert [(r["memory"]["source"], r["memory"]["verified"], r["memory"]["confidence"]) for r in results] == [
        ("agent", False, 0.7),
        ("agent", False, 0.9),
    ]


def test_an_agents_import_never_replaces_what_a_person_verified_without_their_yes(call: Call) -> None:
    # Given alice's verified memory (written by her) and an agent's unverified one
    assert (
        call("memory_create", "POST", "/memory", body=fact("city", "Lives in Chiang Mai"), who=ALICE)[
            "statusCode"
        ]
        == 201
    )
    assert batch(call, [fact("pet", "Has a cat")], who=agent())["json"]["results"][0]["status"] == 201
    records = [
        {"type": "memory", **fact("city", "Lives in Bangkok")},  # changes what she verified
        {"type": "memory", **fact("pet", "Has a cat called Miso")},  # the agent's own: changed
        {"type": "memory", **fact("tea", "ชอบชาเขียว")},  # new
    ]
    # When an agent imports them
    answer = import_(call, "synapse", records, who=agent())
    # Then her memory is held as a proposal, the others are written
    assert answer["statusCode"] == 200, answer
    assert answer["json"] == {"imported": 1, "updated": 1, "skipped": 0, "errors": [], "proposed": 1}
    city = next(m for m in listed(call) if m["key"] == "city")
    assert city["content"] == "Lives in Chiang Mai" and city["verified"] is True and city["version"] == 1
    (proposal,) = call("memory_proposals", "GET", "/memory/proposals", who=ALICE)["json"]["proposals"]
    assert proposal["memory_id"] == city["id"] and proposal["proposed"]["content"] == "Lives in Bangkok"
    # And the same import by her is simply written (a person's own import is never held)
    mine = import_(call, "synapse", records[:1], who=ALICE)["json"]
    assert mine == {"imported": 0, "updated": 1, "skipped": 0, "errors": []}


# --- quotas -------------------------------------------------------------------------------------------


@pytest.fixture
def small_quota(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAX_MEMORIES_PER_MIND", "3")
    monkeypatch.setenv("MAX_MINDS", "2")
    monkeypatch.setenv("MAX_KEYS", "1")
    settings.cache_clear()


def test_memories_past_the_quota_are_409_and_deleting_makes_room(call: Call, small_quota: None) -> None:
    # Given a mind at its limit of 3 memories (two written alone, one in a batch)
    for key in ("a", "b"):
        assert call("memory_create", "POST", "/memory", body=fact(key), who=ALICE)["statusCode"] == 201
    results = batch(call, [fact("c"), fact("d"), fact("a", "a changed")])["json"]["results"]
    # Then the batch's create past the limit is 409 quota_exceeded in its place, the update is fine
    assert [r["status"] for r in results] == [201, 409, 200]
    assert results[1]["error"]["error"]["code"] == "quota_exceeded"
    assert "MAX_MEMORIES_PER_MIND" in results[1]["error"]["error"]["message"]
    # And a new memory alone is 409 too, while an update by key is not
    over = call("memory_create", "POST", "/memory", body=fact("e"), who=ALICE)
    assert over["statusCode"] == 409 and over["json"]["error"]["code"] == "quota_exceeded"
    assert call("memory_create", "POST", "/memory", body=fact("b", "b again"), who=ALICE)["statusCode"] == 200
    # And GET /minds shows the usage against the quota
    minds = call("minds_list", "GET", "/minds", who=ALICE)["json"]["minds"]
    assert (minds[0]["memories"], minds[0]["quota"]) == (3, {"memories": 3})
    # When one is deleted, there is room for one again
    mem_id = next(m["id"] for m in listed(call) if m["key"] == "c")
    path = {"route": "/memory/{id}", "path_params": {"id": mem_id}}
    assert call("memory_delete", "DELETE", f"/memory/{mem_id}", who=ALICE, **path)["statusCode"] == 204
    assert call("memory_create", "POST", "/memory", body=fact("e"), who=ALICE)["statusCode"] == 201
    assert len(listed(call)) == 3


def test_ingest_past_the_quota_is_409(call: Call, small_quota: None) -> None:
    batch(call, [fact("a"), fact("b"), fact("c")])
    body = {"sessionId": "s1", "messages": [{"role": "user", "content": "My name is Kai and I live in Oslo"}]}
    answer = call("memory_ingest", "POST", "/memory/ingest", body=body, who=ALICE)
    assert answer["statusCode"] == 409 and answer["json"]["error"]["code"] == "quota_exceeded"
    assert len(listed(call)) == 3


def test_the_counter_of_a_mind_written_before_it_is_counted_once(call: Call, small_quota: None) -> None:
    # Given a mind whose version item has no counter (written before quotas)
    batch(call, [fact("a"), fact("b")])
    space = Space("alice", "default")
    db.client().update_item(
        TableName=db.table(), Key=db.key(space.pk, space.sk(VERSION_TOKEN)), UpdateExpression="REMOVE mems"
    )
    assert changelog.read(space).memories is None
    # When it is written to, the count is taken once and kept with the version from then on
    assert call("memory_create", "POST", "/memory", body=fact("c"), who=ALICE)["statusCode"] == 201
    assert changelog.read(space).memories == 3
    assert call("memory_create", "POST", "/memory", body=fact("d"), who=ALICE)["statusCode"] == 409


def test_minds_and_keys_past_their_quota_are_409(call: Call, small_quota: None) -> None:
    assert call("minds_create", "POST", "/minds", body={"name": "work"}, who=ALICE)["statusCode"] == 201
    over = call("minds_create", "POST", "/minds", body={"name": "play"}, who=ALICE)
    assert over["statusCode"] == 409 and over["json"]["error"]["code"] == "quota_exceeded"
    assert "MAX_MINDS" in over["json"]["error"]["message"]
    key = {"name": "agent", "scopes": ["memory:read"]}
    assert call("keys_create", "POST", "/keys", body=key, who=ALICE)["statusCode"] == 201
    over = call("keys_create", "POST", "/keys", body=key, who=ALICE)
    assert over["statusCode"] == 409 and over["json"]["error"]["code"] == "quota_exceeded"


# --- POST /memory/import ------------------------------------------------------------------------------


def mem0_records() -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads(MEM0_FILE.read_text(encoding="utf-8"))["results"]
    return records


def test_a_mem0_file_is_imported_with_its_categories_mapped(call: Call) -> None:
    # Given mem0's get_all output
    records = mem0_records()
    # When it is imported
    answer = import_(call, "mem0", records)
    # Then every record is a memory, keyed by its mem0 id, in the mapped category
    assert answer["statusCode"] == 200, answer
    assert answer["json"] == {"imported": 7, "updated": 0, "skipped": 0, "errors": []}
    by_key = {m["key"]: m for m in listed(call)}
    food = by_key["mem0_892db2ae_06d9_49e5_8b3e_585ef9b85b8e"]
    assert food["category"] == "preference" and food["tags"] == ["food", "health"]
    assert food["content"] == "Is a vegetarian and allergic to nuts"
    assert food["created_at"] == food["valid_at"] == "2026-07-26T17:33:13Z"
    assert {m["content"]: m["category"] for m in by_key.values()} == {
        "Is a vegetarian and allergic to nuts": "preference",
        "Name is Alex": "identity",
        "Works as a data engineer at a logistics startup in Bangkok": "project",
        "ชอบกาแฟดำไม่ใส่น้ำตาล": "preference",
        "Planning a trip to Japan in April": "fact",
        "Uses Neovim with the LazyVim distribution": "skill",
        "Mentioned a package arriving on Friday": "note",
    }
    assert all(m["source"] == "user" and m["verified"] for m in by_key.values())
    # When the same file is imported again, nothing changes; a record changed since is an update
    before = seq()
    again = import_(call, "mem0", records)["json"]
    assert again == {"imported": 0, "updated": 0, "skipped": 7, "errors": []}
    assert seq() == before
    records[1]["memory"] = "Name is Alexandra"
    assert import_(call, "mem0", records)["json"] == {"imported": 0, "updated": 1, "skipped": 6, "errors": []}
    # And the identity line follows the imported identity memory
    identity = call(
        "memory_identity", "GET", "/memory/identity/alice", route="/memory/identity/{userId}",
        path_params={"userId": "alice"}, who=ALICE,
    )["json"]["identity"]  # fmt: skip
    assert identity and "Alexandra" in identity


def test_bad_records_are_errors_in_their_place(call: Call) -> None:
    records = [*mem0_records()[:2], {"id": "x", "memory": ""}, {"memory": "no id"}, 7]
    answer = import_(call, "mem0", records)["json"]
    assert (answer["imported"], [e["index"] for e in answer["errors"]]) == (2, [2, 3, 4])
    assert answer["errors"][0]["error"]["error"]["details"][0]["loc"] == ["body", "records", 2, "memory"]


@pytest.mark.parametrize(
    "body",
    [{"format": "mem1", "records": [{"id": "a", "memory": "b"}]}, {"format": "mem0", "records": []}],
    ids=["format", "empty"],
)
def test_a_bad_import_is_a_422_envelope_and_changes_nothing(call: Call, body: dict[str, Any]) -> None:
    answer = call("memory_import", "POST", "/memory/import", body=body, who=ALICE)
    assert answer["statusCode"] == 422 and answer["json"]["error"]["code"] == "validation_error"
    assert listed(call) == []


MEMORY_FIELDS = (
    "category", "key", "content", "tags", "priority", "confidence", "expires_at", "valid_at", "created_at",
    "source", "verified", "version",
)  # fmt: skip
VERSION_FIELDS = ("version", "content", "tags", "priority", "source", "verified", "confidence", "change")


def comparable(exported: dict[str, Any]) -> list[tuple[Any, ...]]:
    history = exported.get("history", {})
    return sorted(
        (
            *(json.dumps(m[f]) for f in MEMORY_FIELDS),
            json.dumps([[v[f] for f in VERSION_FIELDS] for v in history.get(m["id"], [])]),
        )
        for m in exported["memories"]
    )


def records_of(exported: dict[str, Any]) -> list[dict[str, Any]]:
    """An export's memory records as the JSON Lines export has them: each with its history."""
    return [
        {"type": "memory", **m, "history": exported["history"].get(m["id"], [])} for m in exported["memories"]
    ]


def test_export_import_into_an_empty_user_export_gives_the_same_memories(call: Call) -> None:
    # Given alice's memories, some with history, one expiring, and mem0 imports among them
    import_(call, "mem0", mem0_records())
    batch(
        call,
        [fact("city", "Lives in Lyon", tags=["home"], priority="high", expires_at="2099-01-01T00:00:00Z")],
    )
    batch(call, [fact("city", "Lives in Chiang Mai", tags=["home", "thailand"], priority="high")])
    batch(call, [fact("city", "Lives in Bangkok", confidence=0.8)])
    first = export(call, ALICE)
    assert first["history"]
    # When her export's memory records are imported by bob, who has none, with a summary line among them
    records = [{"type": "summary", "text": "not a memory"}, *records_of(first)]
    answer = import_(call, "synapse", records, who=BOB)["json"]
    assert answer == {"imported": len(first["memories"]), "updated": 0, "skipped": 1, "errors": []}
    # Then bob's export gives the same memories, history included
    second = export(call, BOB)
    assert comparable(second) == comparable(first)
    # And importing it again changes nothing
    before = seq("bob")
    again = import_(call, "synapse", records, who=BOB)["json"]
    assert again == {"imported": 0, "updated": 0, "skipped": len(records), "errors": []}
    assert seq("bob") == before


def test_an_export_past_one_response_is_413(call: Call, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an export larger than the limit of one response (the limit made small)
    batch(call, [fact(f"k{i}", "x" * 500) for i in range(10)])
    function = load_function("me_export")
    monkeypatch.setattr(function, "MAX_EXPORT_BYTES", 4000)
    # When it is asked for
    answer = function.handler(http_event("GET", "/me/export", who=ALICE), LambdaContext())
    # Then it is 413 payload_too_large, naming POST /me/exports
    assert answer["statusCode"] == 413, answer
    error = json.loads(answer["body"])["error"]
    assert error["code"] == "payload_too_large" and "POST /me/exports" in error["message"]
    # And below the limit it is the export, as before
    assert len(export(call, ALICE)["memories"]) == 10
