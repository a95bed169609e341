"""Time on the data: a mind's settings (PATCH /minds/{mindId}), `valid_at` on writes, and
GET /memory/timeline, through the handlers against moto."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from harness.lambdas import ALICE, user
from synapse.core.models.base import iso
from tests.conftest import TABLE, Call

BOB = user("bob")


def patch_mind(call: Call, mind_id: str, body: Any, who: dict[str, str] = ALICE) -> dict[str, Any]:
    return call(
        "minds_update", "PATCH", f"/minds/{mind_id}", route="/minds/{mindId}",
        path_params={"mindId": mind_id}, body=body, who=who,
    )  # fmt: skip


def minds(call: Call, who: dict[str, str] = ALICE) -> dict[str, dict[str, Any]]:
    answer = call("minds_list", "GET", "/minds", who=who)
    assert answer["statusCode"] == 200, answer
    return {m["mind_id"]: m for m in answer["json"]["minds"]}


def remember(
    call: Call, key: str, content: str, *, headers: dict[str, str] | None = None, **more: Any
) -> dict[str, Any]:
    body = {"category": "note", "key": key, "content": content, **more}
    answer = call("memory_create", "POST", "/memory", body=body, who=ALICE, headers=headers)
    assert answer["statusCode"] in (200, 201), answer
    return dict(answer["json"])


def by_id(
    call: Call, function: str, method: str, mem_id: str, suffix: str = "", **kwargs: Any
) -> dict[str, Any]:
    return call(
        function, method, f"/memory/{mem_id}{suffix}", route="/memory/{id}" + suffix,
        path_params={"id": mem_id}, **{"who": ALICE, **kwargs},
    )  # fmt: skip


def timeline(
    call: Call, who: dict[str, str] = ALICE, headers: dict[str, str] | None = None, **query: str
) -> dict[str, Any]:
    return call("memory_timeline", "GET", "/memory/timeline", query=query or None, who=who, headers=headers)


def assert_invalid(answer: dict[str, Any], loc: list[str]) -> None:
    assert answer["statusCode"] == 422, answer
    error = answer["json"]["error"]
    assert error["code"] == "validation_error"
    assert error["message"]
    assert error["details"][0]["loc"][: len(loc)] == loc


# --- PATCH /minds/{mindId} --------------------------------------------------------------------------


def test_the_default_mind_takes_a_timezone_and_every_minds_answer_shows_it(call: Call) -> None:
    # Given alice's default mind, never listed nor patched
    # When she sets its timezone and turns review off
    answer = patch_mind(call, "default", {"timezone": "Asia/Bangkok", "review_agent_changes": False})
    # Then the answer is the mind with its settings
    assert answer["statusCode"] == 200, answer
    assert answer["json"]["mind_id"] == "default" and answer["json"]["name"] == "alice"
    assert (answer["json"]["timezone"], answer["json"]["review_agent_changes"]) == ("Asia/Bangkok", False)
    # And GET /minds answers the same, with the created_at the patch stored
    listed = minds(call)["default"]
    assert (listed["timezone"], listed["review_agent_changes"]) == ("Asia/Bangkok", False)
    assert listed["created_at"] == answer["json"]["created_at"]
    # And null brings the defaults back
    back = patch_mind(call, "default", {"timezone": None, "review_agent_changes": None})
    assert (back["json"]["timezone"], back["json"]["review_agent_changes"]) == ("UTC", True)


def test_post_minds_takes_and_answers_the_settings(call: Call) -> None:
    # Given a new mind made with a timezone
    made = call(
        "minds_create", "POST", "/minds", body={"name": "ผู้ช่วย", "timezone": "Asia/Bangkok"}, who=ALICE
    )
    # Then POST and GET /minds answer it, and review defaults to true
    assert made["statusCode"] == 201, made
    assert (made["json"]["timezone"], made["json"]["review_agent_changes"]) == ("Asia/Bangkok", True)
    assert minds(call)[made["json"]["mind_id"]]["timezone"] == "Asia/Bangkok"
    # and GET /me/export keeps each mind's settings
    exported = call("me_export", "GET", "/me/export", who=ALICE)["json"]["minds"]
    assert [(m["name"], m["timezone"], m["review_agent_changes"]) for m in exported] == [
        ("ผู้ช่วย", "Asia/Bangkok", True)
    ]
    # And a mind made without settings answers the defaults
    plain = call("minds_create", "POST", "/minds", body={"name": "plain"}, who=ALICE)["json"]
    assert (plain["timezone"], plain["review_agent_changes"]) == ("UTC", True)


def test_a_mind_is_renamed_in_thai_and_its_old_name_is_free_again(call: Call) -> None:
    # Given a mind named "Support"
    mind_id = call("minds_create", "POST", "/minds", body={"name": "Support"}, who=ALICE)["json"]["mind_id"]
    # When alice renames it and describes it in Thai
    answer = patch_mind(call, mind_id, {"name": "ฝ่ายบริการลูกค้า", "description": "ความจำของบอทตอบแชท"})
    # Then it answers the new name and description, and keeps the other settings
    assert answer["statusCode"] == 200, answer
    assert (answer["json"]["name"], answer["json"]["description"]) == ("ฝ่ายบริการลูกค้า", "ความจำของบอทตอบแชท")
    assert answer["json"]["timezone"] == "UTC"
    assert minds(call)[mind_id]["name"] == "ฝ่ายบริการลูกค้า"
    # And the old name can be taken by a new mind; the new one cannot
    assert call("minds_create", "POST", "/minds", body={"name": "support"}, who=ALICE)["statusCode"] == 201
    assert (
        call("minds_create", "POST", "/minds", body={"name": "ฝ่ายบริการลูกค้า"}, who=ALICE)["statusCode"] == 409
    )
    # And description null clears it
    assert patch_mind(call, mind_id, {"description": None})["json"]["description"] is None


def test_a_name_another_mind_has_is_a_conflict_and_changes_nothing(call: Call) -> None:
    # Given two minds
    first = call("minds_create", "POST", "/minds", body={"name": "Work"}, who=ALICE)["json"]["mind_id"]
    call("minds_create", "POST", "/minds", body={"name": "Home"}, who=ALICE)
    before = minds(call)
    # When the first is renamed to the second's name (another case), or to the userId
    taken = patch_mind(call, first, {"name": "HOME", "timezone": "Asia/Tokyo"})
    default_name = patch_mind(call, first, {"name": "Alice"})
    # Then both are 409 in the envelope, and nothing changed (the timezone sent with it neither)
    assert taken["statusCode"] == default_name["statusCode"] == 409
    assert taken["json"]["error"]["code"] == "conflict"
    assert minds(call) == before


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"timezone": "Mars/Olympus_Mons"}, ["body", "timezone"]),
        ({"timezone": "../../etc/passwd"}, ["body", "timezone"]),
        ({"timezone": "เวลาไทย"}, ["body", "timezone"]),
        ({"review_agent_changes": "no"}, ["body", "review_agent_changes"]),
        ({"name": ""}, ["body", "name"]),
        ({"name": None}, ["body", "name"]),
        ({"description": "x" * 1001}, ["body", "description"]),
    ],
)
def test_bad_settings_are_422_and_change_nothing(call: Call, body: dict[str, Any], loc: list[str]) -> None:
    # Given a mind with a timezone
    mind_id = call(
        "minds_create", "POST", "/minds", body={"name": "Travel", "timezone": "Asia/Bangkok"}, who=ALICE
    )["json"]["mind_id"]
    before = minds(call)
    # When a bad setting is sent
    answer = patch_mind(call, mind_id, body)
    # Then it is a 422 envelope saying where, and the mind is as it was
    assert_invalid(answer, loc)
    assert minds(call) == before


def test_the_default_minds_name_is_the_user_id(call: Call) -> None:
    # When alice renames her default mind
    answer = patch_mind(call, "default", {"name": "Main"})
    # Then it is refused, and sending her own userId changes nothing
    assert_invalid(answer, ["body", "name"])
    assert patch_mind(call, "default", {"name": "alice"})["statusCode"] == 200
    assert minds(call)["default"]["name"] == "alice"


def test_another_users_mind_and_unknown_minds_are_404(call: Call) -> None:
    # Given a mind of alice's
    mind_id = call("minds_create", "POST", "/minds", body={"name": "Private"}, who=ALICE)["json"]["mind_id"]
    # When bob patches it, or anyone patches a mind that does not exist or cannot
    for who, target in ((BOB, mind_id), (ALICE, "m_000000000000"), (ALICE, "nope")):
        answer = patch_mind(call, target, {"timezone": "Asia/Bangkok"}, who=who)
        # Then it is 404 in the envelope
        assert answer["statusCode"] == 404, answer
        assert answer["json"]["error"]["code"] == "not_found"
    # And alice's mind is unchanged; bob's own default mind is his
    assert minds(call)[mind_id]["timezone"] == "UTC"
    assert patch_mind(call, "default", {"timezone": "Europe/Berlin"}, who=BOB)["json"]["name"] == "bob"
    assert minds(call)["default"]["timezone"] == "UTC"


def test_a_settings_write_that_lost_its_race_reads_again(call: Call) -> None:
    # Given the mind's record as read by a writer, then changed by another
    from synapse.store.account import minds as store

    mind_id = call("minds_create", "POST", "/minds", body={"name": "Race"}, who=ALICE)["json"]["mind_id"]
    read = store.get_mind("alice", mind_id)
    assert read is not None
    assert patch_mind(call, mind_id, {"timezone": "Asia/Tokyo"})["statusCode"] == 200
    # When the first writer stores its change over what it read
    import dataclasses

    won = store.update_mind("alice", read, dataclasses.replace(read, description="stale"))
    # Then it loses (nothing written), and the other writer's change stands
    assert won is False
    now = store.get_mind("alice", mind_id)
    assert now is not None and (now.timezone, now.description) == ("Asia/Tokyo", None)


# --- valid_at on writes ----------------------------------------------------------------------------


def test_a_date_alone_is_midnight_in_the_minds_timezone(call: Call) -> None:
    # Given alice's default mind lives in Bangkok (UTC+7)
    patch_mind(call, "default", {"timezone": "Asia/Bangkok"})
    # When she stores a dentist appointment on a day
    made = remember(call, "dentist", "ไปหาหมอฟันที่โรงพยาบาลศิริราช", valid_at="2026-12-03")
    # Then valid_at is 00:00 of that day in Bangkok, answered in UTC
    assert made["valid_at"] == "2026-12-02T17:00:00Z"
    got = by_id(call, "memory_get", "GET", made["id"])
    assert got["json"]["valid_at"] == "2026-12-02T17:00:00Z"
    # And the same date in a UTC mind is 00:00 UTC
    other = call("minds_create", "POST", "/minds", body={"name": "utc"}, who=ALICE)["json"]["mind_id"]
    there = remember(call, "dentist", "dentist", valid_at="2026-12-03", headers={"x-mind-id": other})
    assert there["valid_at"] == "2026-12-03T00:00:00Z"


def test_put_changes_and_clears_valid_at_and_history_keeps_each(call: Call) -> None:
    # Given a memory without valid_at
    made = remember(call, "trip", "Trip to Chiang Rai")
    assert made["valid_at"] is None
    # When PUT sets it with an offset, then clears it
    first = by_id(call, "memory_update", "PUT", made["id"], body={"valid_at": "2026-11-20T09:30:00+07:00"})
    assert first["statusCode"] == 200, first
    assert first["json"]["valid_at"] == "2026-11-20T02:30:00Z"
    cleared = by_id(call, "memory_update", "PUT", made["id"], body={"valid_at": None})
    assert cleared["json"]["valid_at"] is None
    # Then the history keeps each version's valid_at
    versions = by_id(call, "memory_history", "GET", made["id"], "/history")["json"]["versions"]
    assert [(v["version"], v["valid_at"]) for v in versions] == [
        (3, None),
        (2, "2026-11-20T02:30:00Z"),
        (1, None),
    ]
    # And a restore brings a version's valid_at back with its content
    back = by_id(call, "memory_restore", "POST", made["id"], "/restore", body={"version": 2})
    assert back["statusCode"] == 200, back
    assert back["json"]["valid_at"] == "2026-11-20T02:30:00Z" and back["json"]["version"] == 4
    # And a POST by key without valid_at keeps it
    again = remember(call, "trip", "Trip to Chiang Rai, by bus")
    assert again["valid_at"] == "2026-11-20T02:30:00Z"


@pytest.mark.parametrize(
    "value", ["2026-02-30", "2026-12-03T10:00:00", "next tuesday", "03/12/2026", 1796205600, "๒๕๖๙-๑๒-๐๓"]
)
def test_a_bad_valid_at_is_422_and_changes_nothing(call: Call, value: Any) -> None:
    # Given a memory with a valid_at
    made = remember(call, "meeting", "ประชุมที่เชียงราย", valid_at="2026-12-05T03:00:00Z")
    # When a write sends a bad valid_at
    created = call(
        "memory_create", "POST", "/memory", who=ALICE,
        body={"category": "note", "key": "meeting", "content": "changed", "valid_at": value},
    )  # fmt: skip
    updated = by_id(call, "memory_update", "PUT", made["id"], body={"valid_at": value})
    # Then both are 422 at valid_at, and the memory is as it was
    assert_invalid(created, ["body", "valid_at"])
    assert_invalid(updated, ["body", "valid_at"])
    got = by_id(call, "memory_get", "GET", made["id"])["json"]
    assert (got["content"], got["valid_at"], got["version"]) == ("ประชุมที่เชียงราย", "2026-12-05T03:00:00Z", 1)


# --- GET /memory/timeline ---------------------------------------------------------------------------


def test_the_timeline_orders_memories_by_their_time_within_the_range_and_pages(call: Call) -> None:
    # Given memories about days of the past year (and one about no day: its time is when it was stored)
    patch_mind(call, "default", {"timezone": "Asia/Bangkok"})
    remember(call, "dentist", "ไปหาหมอฟัน (3 ธ.ค. 2568)", valid_at="2025-12-03")
    remember(call, "moved", "ย้ายไปกรุงเทพฯ", valid_at="2025-11-10T08:00:00Z")
    remember(call, "meeting", "ประชุมที่เชียงราย", valid_at="2025-12-05")
    remember(call, "old_trip", "Trip to Phuket", valid_at="2025-04-13")
    remember(call, "today", "Stored today")
    # When the whole timeline is read two at a time
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(5):
        page = timeline(call, limit="2", **({"cursor": cursor} if cursor else {}))
        assert page["statusCode"] == 200, page
        assert len(page["json"]["memories"]) <= 2
        seen += [m["key"] for m in page["json"]["memories"]]
        cursor = page["json"]["next_cursor"]
        if cursor is None:
            break
    # Then every memory comes once, oldest first (valid_at, else created_at)
    assert seen == ["old_trip", "moved", "dentist", "meeting", "today"]
    # And a range in the mind's days picks December 2025 (Bangkok) only: [from, to)
    december = timeline(call, **{"from": "2025-12-01", "to": "2026-01-01"})["json"]
    assert [m["key"] for m in december["memories"]] == ["dentist", "meeting"]
    assert december["memories"][0]["valid_at"] == "2025-12-02T17:00:00Z"
    assert december["next_cursor"] is None
    # the upper bound is left out: a memory exactly at `to` is not in the range
    exact = timeline(call, **{"from": "2025-11-01T00:00:00Z", "to": "2025-12-02T17:00:00Z"})["json"]
    assert [m["key"] for m in exact["memories"]] == ["moved"]
    # and the lower bound is in
    at_start = timeline(call, **{"from": "2025-12-02T17:00:00Z", "to": "2025-12-03T00:00:00Z"})["json"]
    assert [m["key"] for m in at_start["memories"]] == ["dentist"]


def test_the_timeline_follows_changes_and_leaves_out_expired_deleted_and_other_minds(call: Call) -> None:
    # Given memories in November, one expired, one deleted, one moved to January
    soon = iso(datetime.now(UTC) - timedelta(minutes=1))
    remember(call, "kept", "ยังอยู่", valid_at="2026-11-02T00:00:00Z")
    remember(call, "expired", "หมดอายุแล้ว", valid_at="2026-11-03T00:00:00Z", expires_at=soon)
    gone = remember(call, "gone", "ลบแล้ว", valid_at="2026-11-04T00:00:00Z")
    moved = remember(call, "moved", "เลื่อนไปมกราคม", valid_at="2026-11-05T00:00:00Z")
    assert by_id(call, "memory_delete", "DELETE", gone["id"])["statusCode"] == 204
    by_id(call, "memory_update", "PUT", moved["id"], body={"valid_at": "2027-01-05T00:00:00Z"})
    # and another mind of alice's with a November memory, and bob's
    other = call("minds_create", "POST", "/minds", body={"name": "other"}, who=ALICE)["json"]["mind_id"]
    remember(call, "elsewhere", "อีกที่หนึ่ง", valid_at="2026-11-06T00:00:00Z", headers={"x-mind-id": other})
    call(
        "memory_create",
        "POST",
        "/memory",
        who=BOB,
        body={"category": "note", "key": "bobs", "content": "b", "valid_at": "2026-11-07"},
    )
    # When November is read in the default mind
    november = timeline(call, **{"from": "2026-11-01", "to": "2026-12-01"})
    # Then only the live memory of this mind whose time is in November is there
    assert [m["content"] for m in november["json"]["memories"]] == ["ยังอยู่"]
    # and January has the moved one; the other mind has its own
    assert [m["key"] for m in timeline(call, **{"from": "2027-01-01"})["json"]["memories"]] == ["moved"]
    there = timeline(call, headers={"x-mind-id": other}, **{"to": "2026-12-01"})["json"]["memories"]
    assert [m["key"] for m in there] == ["elsewhere"]
    # And bob cannot reach alice's other mind (404)
    assert timeline(call, who=BOB, headers={"x-mind-id": other})["statusCode"] == 404


@pytest.mark.parametrize(
    ("query", "loc"),
    [
        ({"from": "2026-12-01", "to": "2026-11-01"}, ["query", "to"]),
        ({"from": "2026-12-01T00:00:00Z", "to": "2026-12-01T00:00:00Z"}, ["query", "to"]),
        ({"from": "yesterday"}, ["query", "from"]),
        ({"to": "2026-13-01"}, ["query", "to"]),
        ({"limit": "0"}, ["query", "limit"]),
        ({"limit": "101"}, ["query", "limit"]),
        ({"cursor": "not-a-cursor"}, ["query", "cursor"]),
    ],
)
def test_bad_timeline_queries_are_422(call: Call, query: dict[str, str], loc: list[str]) -> None:
    # Given a memory
    remember(call, "a", "a", valid_at="2026-11-02")
    # When the timeline is asked badly
    answer = timeline(call, **query)
    # Then it is a 422 envelope naming the parameter
    assert_invalid(answer, loc)


def test_a_cursor_of_another_list_is_422(call: Call) -> None:
    # Given a cursor of GET /memory (not the timeline's)
    for key in ("a", "b"):
        remember(call, key, key)
    cursor = call("memory_list", "GET", "/memory", query={"limit": "1"}, who=ALICE)["json"]["next_cursor"]
    assert cursor
    # When it is given to the timeline, then it is refused
    assert_invalid(timeline(call, cursor=cursor), ["query", "cursor"])


def test_memories_stored_before_the_index_are_placed_by_the_backfill(call: Call, aws: Any) -> None:
    # Given memories in two minds whose items have no timeline place (as before this release)
    from synapse.store import nuggets
    from synapse.store.keys import TIMELINE_PK, TIMELINE_SK

    other = call("minds_create", "POST", "/minds", body={"name": "old"}, who=ALICE)["json"]["mind_id"]
    remember(call, "later", "ทีหลัง", valid_at="2025-06-02T00:00:00Z")
    remember(call, "earlier", "ก่อนหน้า", valid_at="2025-06-01T00:00:00Z")
    remember(call, "undated", "no date")
    remember(
        call, "there", "in the other mind", valid_at="2025-06-03T00:00:00Z", headers={"x-mind-id": other}
    )
    table = TABLE
    for item in aws.scan(TableName=table)["Items"]:
        if TIMELINE_PK in item:
            aws.update_item(
                TableName=table,
                Key={"pk": item["pk"], "sk": item["sk"]},
                UpdateExpression="REMOVE #p, #s",
                ExpressionAttributeNames={"#p": TIMELINE_PK, "#s": TIMELINE_SK},
            )
    assert timeline(call)["json"]["memories"] == []
    # When the backfill runs (twice)
    placed = nuggets.backfill_timeline()
    again = nuggets.backfill_timeline()
    # Then every memory, and only memories, got its place once; the timelines are whole again
    assert (placed, again) == (4, 0)
    assert [m["key"] for m in timeline(call)["json"]["memories"]] == ["earlier", "later", "undated"]
    assert [m["key"] for m in timeline(call, headers={"x-mind-id": other})["json"]["memories"]] == ["there"]
    # and no history item or other item has a place
    placed_items = [i for i in aws.scan(TableName=table)["Items"] if TIMELINE_PK in i]
    assert len(placed_items) == 4 and all("nug:" in i["sk"]["S"] for i in placed_items)
