"""Time on the way in, through the handlers (moto): messages keep when they were said, ingest reads
relative dates in the request's or the mind's timezone and dates its memories, summaries keep the
span of their messages."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from harness.gemini import GeminiDouble
from harness.lambdas import ALICE, LambdaContext, load_function, sample_event
from synapse.core.models.base import iso, utcnow
from synapse.store.account import minds as minds_store
from tests.conftest import TABLE, Call

THAI_ISSUE = "เมื่อวานผมไปหาหมอฟันที่โรงพยาบาลศิริราช พรุ่งนี้ต้องไปประชุมที่เชียงราย"
BANGKOK_MIND = "m_bkk000000000"


def ingest(call: Call, body: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    return call("memory_ingest", "POST", "/memory/ingest", body=body, who=ALICE, headers=headers)


def get_memory(call: Call, memory_id: str) -> dict[str, Any]:
    answer = call(
        "memory_get",
        "GET",
        f"/memory/{memory_id}",
        route="/memory/{id}",
        path_params={"id": memory_id},
        who=ALICE,
    )
    assert answer["statusCode"] == 200, answer
    memory: dict[str, Any] = answer["json"]
    return memory


def summaries_of(call: Call, session: str, headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    answer = call(
        "memory_summaries",
        "GET",
        f"/memory/summaries/{session}",
        route="/memory/summaries/{sessionId}",
        path_params={"sessionId": session},
        who=ALICE,
        headers=headers,
    )
    found: list[dict[str, Any]] = answer["json"]["summaries"]
    return found


def stored_messages(aws: Any, session: str) -> list[tuple[str, str]]:
    """(content, created_at) of the raw messages of one of alice's default-mind sessions, in order."""
    items = aws.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :p AND begins_with(sk, :m)",
        ExpressionAttributeValues={":p": {"S": "mem:alice"}, ":m": {"S": f"msg:{session}:"}},
    )["Items"]
    return [(i["content"]["S"], i["created_at"]["S"]) for i in items]


def bangkok_mind() -> dict[str, str]:
    """A mind of alice's whose timezone is Asia/Bangkok; the header that acts in it."""
    record = minds_store.MindRecord(
        mind_id=BANGKOK_MIND, name="Thai life", description=None, created_at=utcnow(), timezone="Asia/Bangkok"
    )
    minds_store.put_mind("alice", record)
    return {"x-mind-id": BANGKOK_MIND}


# --- ingest -------------------------------------------------------------------------------------------


def test_the_issues_thai_message_becomes_two_memories_of_two_days(call: Call, aws: Any) -> None:
    # Given the issue's message, said at 10:00 on 4 December 2026 in Bangkok (03:00 UTC)
    message = {"role": "user", "content": THAI_ISSUE, "created_at": "2026-12-04T03:00:00Z"}
    # When it is ingested with the Bangkok timezone
    answer = ingest(call, {"sessionId": "th", "messages": [message], "timezone": "Asia/Bangkok"})
    # Then two memories say which days "yesterday" and "tomorrow" were, valid from 00:00 of each
    assert answer["statusCode"] == 200, answer
    out = answer["json"]
    assert [(n["content"], n["valid_at"]) for n in out["nuggets"]] == [
        ("ผมไปหาหมอฟันที่โรงพยาบาลศิริราช (3 ธ.ค. 2569)", "2026-12-02T17:00:00Z"),
        ("ต้องไปประชุมที่เชียงราย (5 ธ.ค. 2569)", "2026-12-04T17:00:00Z"),
    ]
    assert out["nuggets_created"] == 2
    # and they are stored so: GET /memory/{id} answers the same
    for nugget in out["nuggets"]:
        stored = get_memory(call, nugget["id"])
        assert (stored["content"], stored["valid_at"]) == (nugget["content"], nugget["valid_at"])
    # and the raw message keeps when it was said, not when it arrived
    assert stored_messages(aws, "th") == [(THAI_ISSUE, "2026-12-04T03:00:00Z")]


def test_a_move_last_month_is_the_location_slot_dated_by_its_month(call: Call) -> None:
    # Given "I moved to Bangkok last month" said on 4 December 2026 (the default mind: UTC)
    message = {
        "role": "user",
        "content": "I moved to Bangkok last month",
        "created_at": "2026-12-04T03:00:00Z",
    }
    # When ingested
    (nugget,) = ingest(call, {"sessionId": "s", "messages": [message]})["json"]["nuggets"]
    # Then the location slot says when, not "Lives in Bangkok last month"
    assert (nugget["category"], nugget["key"]) == ("identity", "user_location")
    assert (nugget["content"], nugget["valid_at"]) == (
        "Moved to Bangkok in November 2026",
        "2026-11-01T00:00:00Z",
    )
    # and a later move updates that memory, its valid_at replaced by the new one
    later = {"role": "user", "content": "ผมย้ายไปอยู่เชียงใหม่เมื่อวาน", "created_at": "2026-12-04T05:00:00Z"}
    updated = ingest(call, {"sessionId": "s", "messages": [later]})["json"]
    assert updated["nuggets_updated"] == 1 and updated["nuggets"][0]["id"] == nugget["id"]
    assert (updated["nuggets"][0]["content"], updated["nuggets"][0]["valid_at"]) == (
        "ย้ายไปอยู่ เชียงใหม่ (3 ธ.ค. 2569)",
        "2026-12-03T00:00:00Z",
    )
    history = call(
        "memory_history",
        "GET",
        f"/memory/{nugget['id']}/history",
        route="/memory/{id}/history",
        path_params={"id": nugget["id"]},
        who=ALICE,
    )["json"]
    assert [v.get("valid_at") for v in history["versions"]] == [
        "2026-12-03T00:00:00Z",
        "2026-11-01T00:00:00Z",
    ]


def test_a_conversation_of_last_year_keeps_its_dates(call: Call, aws: Any) -> None:
    # Given a conversation said in March 2025, imported now
    turns = [
        {"role": "user", "content": "I work at Agoda", "created_at": "2025-03-01T09:00:00Z"},
        {"role": "assistant", "content": "Noted!", "created_at": "2025-03-01T09:00:05+00:00"},
        {"role": "user", "content": "I fell ill yesterday", "created_at": "2025-03-01T16:30:00+07:00"},
    ]
    answer = ingest(call, {"sessionId": "old", "messages": turns})
    # Then every memory is dated by what was said then, not by today
    assert answer["statusCode"] == 200, answer
    assert {n["content"]: n["valid_at"] for n in answer["json"]["nuggets"]} == {
        "Works at Agoda": "2025-03-01T09:00:00Z",
        "I fell ill on 28 February 2025": "2025-02-28T00:00:00Z",
    }
    # and the raw messages, the context's recent ones and the export keep their times (in UTC)
    said = ["2025-03-01T09:00:00Z", "2025-03-01T09:00:05Z", "2025-03-01T09:30:00Z"]
    assert [at for _, at in stored_messages(aws, "old")] == said
    context = call(
        "memory_context", "POST", "/memory/context", body={"query": "work", "sessionId": "old"}, who=ALICE
    )["json"]
    assert [m["created_at"] for m in context["recent"]] == said
    export = call("me_export", "GET", "/me/export", who=ALICE)["json"]
    (session,) = export["sessions"]
    assert [m["created_at"] for m in session["messages"]] == said


def test_messages_without_a_time_are_said_when_the_request_arrives(call: Call, aws: Any) -> None:
    # When a message without created_at is ingested
    before = utcnow()
    (nugget,) = ingest(
        call, {"sessionId": "now", "messages": [{"role": "user", "content": "I work at Grab"}]}
    )["json"]["nuggets"]
    # Then it and its memory are dated now
    ((_, at),) = stored_messages(aws, "now")
    assert before - timedelta(seconds=1) <= datetime.fromisoformat(at) <= utcnow()
    assert nugget["valid_at"] == at


def test_a_message_said_in_the_future_is_422_and_nothing_is_stored(call: Call, aws: Any) -> None:
    # Given a message dated ten minutes from now (clock skew of 5 minutes is allowed)
    soon = iso(utcnow() + timedelta(minutes=10))
    body = {"sessionId": "f", "messages": [{"role": "user", "content": "I live in Lyon", "created_at": soon}]}
    # When ingested, Then it is refused in the contract's envelope, naming the field
    answer = ingest(call, body)
    assert answer["statusCode"] == 422
    assert answer["json"]["error"]["code"] == "validation_error"
    assert ["body", "messages", 0, "created_at"] in [d["loc"] for d in answer["json"]["error"]["details"]]
    # and so is a timestamp without an offset; and nothing was stored
    naive = {
        "sessionId": "f",
        "messages": [{"role": "user", "content": "x", "created_at": "2025-01-01T10:00:00"}],
    }
    assert ingest(call, naive)["statusCode"] == 422
    assert stored_messages(aws, "f") == []
    # and the same holds for summarize
    summarize = call("memory_summarize", "POST", "/memory/summarize", body=body, who=ALICE)
    assert summarize["statusCode"] == 422


def test_the_request_timezone_overrides_the_minds(
    call: Call, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a mind in Bangkok, and a message said at 20:00 UTC on 31 December 2025 (1 January in Bangkok)
    headers = bangkok_mind()
    said = {"role": "user", "content": "พรุ่งนี้ต้องไปหาหมอฟัน", "created_at": "2025-12-31T20:00:00Z"}
    # When ingested in the mind: Bangkok's tomorrow is 2 January 2026
    (nugget,) = ingest(call, {"sessionId": "a", "messages": [said]}, headers)["json"]["nuggets"]
    assert (nugget["content"], nugget["valid_at"]) == ("ต้องไปหาหมอฟัน (2 ม.ค. 2569)", "2026-01-01T17:00:00Z")
    # When the request says UTC: UTC's tomorrow is 1 January 2026
    (utc_nugget,) = ingest(call, {"sessionId": "b", "messages": [said], "timezone": "UTC"}, headers)["json"][
        "nuggets"
    ]
    assert (utc_nugget["content"], utc_nugget["valid_at"]) == (
        "ต้องไปหาหมอฟัน (1 ม.ค. 2569)",
        "2026-01-01T00:00:00Z",
    )
    # And in the default mind (UTC unless set) with a timezone in the body, its record is never read
    reads: list[str] = []
    real = minds_store.get_mind
    monkeypatch.setattr(minds_store, "get_mind", lambda u, m: reads.append(m) or real(u, m))
    tokyo = ingest(call, {"sessionId": "c", "messages": [said], "timezone": "Asia/Tokyo"})["json"]
    assert tokyo["nuggets"][0]["valid_at"] == "2026-01-01T15:00:00Z" and reads == []
    # while without one it is read (once) for its timezone
    ingest(call, {"sessionId": "d", "messages": [{**said, "content": "พรุ่งนี้ประชุม"}]})
    assert reads == ["default"]
    # and an unknown timezone is 422
    assert (
        ingest(call, {"sessionId": "e", "messages": [said], "timezone": "Mars/Olympus"})["statusCode"] == 422
    )


def test_the_same_words_at_two_given_times_are_two_ingests(call: Call, aws: Any) -> None:
    # Given one message, sent twice with the same time (a retry) and once said a day later
    message = {"role": "user", "content": "พรุ่งนี้ต้องไปหาหมอฟัน", "created_at": "2026-11-02T03:00:00Z"}
    first = ingest(call, {"sessionId": "r", "messages": [message]})["json"]
    retry = ingest(call, {"sessionId": "r", "messages": [message]})["json"]
    later = {**message, "created_at": "2026-11-03T03:00:00Z"}
    other = ingest(call, {"sessionId": "r", "messages": [later]})["json"]
    # Then the retry is the first answer, the message is stored once for it; the later one is a new
    # turn, a memory of its own day
    assert retry == first
    assert [at for _, at in stored_messages(aws, "r")] == ["2026-11-02T03:00:00Z", "2026-11-03T03:00:00Z"]
    assert [n["content"] for n in [*first["nuggets"], *other["nuggets"]]] == [
        "ต้องไปหาหมอฟัน (3 พ.ย. 2569)",
        "ต้องไปหาหมอฟัน (4 พ.ย. 2569)",
    ]
    # and an Idempotency-Key reused with the same turns in another timezone is another body: 422
    keyed = {"sessionId": "k", "messages": [message]}
    assert ingest(call, keyed, {"idempotency-key": "k-1"})["statusCode"] == 200
    clash = ingest(call, {**keyed, "timezone": "Asia/Bangkok"}, {"idempotency-key": "k-1"})
    assert clash["statusCode"] == 422 and clash["json"]["error"]["code"] == "validation_error"


def test_with_gemini_the_prompt_has_the_times_and_the_nugget_its_valid_at(
    call: Call, gemini_double: GeminiDouble
) -> None:
    # Given Gemini answers a dated nugget for the message it was shown
    def generate(body: dict[str, Any]) -> str:
        prompt = " ".join(p["text"] for c in body["contents"] for p in c["parts"])
        assert "[1] 2026-12-04 10:00 (Friday) user: " in prompt  # 03:00 UTC, in Bangkok
        nugget = {
            "category": "context",
            "key": "meeting_chiang_rai",
            "content": "ประชุมที่เชียงราย (5 ธ.ค. 2569)",
            "tags": ["meeting"],
            "priority": "normal",
            "confidence": 0.9,
            "is_identity": False,
            "valid_at": "2026-12-05",
            "message": 1,
        }
        return json.dumps({"nuggets": [nugget]}, ensure_ascii=False)

    gemini_double.generate = generate
    message = {"role": "user", "content": THAI_ISSUE, "created_at": "2026-12-04T03:00:00Z"}
    # When ingested in Bangkok
    answer = ingest(call, {"sessionId": "g", "messages": [message], "timezone": "Asia/Bangkok"})
    # Then the memory is valid from 00:00 of that day in Bangkok
    assert answer["statusCode"] == 200, answer
    (nugget,) = answer["json"]["nuggets"]
    assert (nugget["content"], nugget["valid_at"]) == ("ประชุมที่เชียงราย (5 ธ.ค. 2569)", "2026-12-04T17:00:00Z")
    system = json.dumps(
        gemini_double.calls("generateContent")[0].body["systemInstruction"], ensure_ascii=False
    )
    assert "Asia/Bangkok" in system


# --- summaries ----------------------------------------------------------------------------------------


def test_a_summary_records_when_its_messages_were_said(call: Call, aws: Any) -> None:
    # Given stored messages said over two days of 2025
    turns = [
        {
            "role": "user",
            "content": "We chose Postgres for the billing service",
            "created_at": "2025-05-02T09:00:00Z",
        },
        {"role": "user", "content": "We signed the contract yesterday", "created_at": "2025-05-03T10:00:00Z"},
        {"role": "user", "content": "The launch is planned for June", "created_at": "2025-05-01T08:00:00Z"},
    ]
    ingest(call, {"sessionId": "sum", "messages": turns})
    # When the session is summarized from them, and then from given messages without times
    stored = call("memory_summarize", "POST", "/memory/summarize", body={"sessionId": "sum"}, who=ALICE)
    before = utcnow()
    given = call(
        "memory_summarize",
        "POST",
        "/memory/summarize",
        body={"sessionId": "sum", "messages": [{"role": "user", "content": "We moved the launch to July"}]},
        who=ALICE,
    )
    assert stored["statusCode"] == 200 and given["statusCode"] == 200
    # Then the first chunk spans the earliest to the latest message, and says the day "yesterday" was
    first, second = summaries_of(call, "sum")
    assert (first["first_message_at"], first["last_message_at"]) == (
        "2025-05-01T08:00:00Z",
        "2025-05-03T10:00:00Z",
    )
    assert "We signed the contract on 2 May 2025" in first["summary"]
    # and the given messages were said when the request arrived
    assert second["first_message_at"] == second["last_message_at"]
    assert before - timedelta(seconds=1) <= datetime.fromisoformat(second["first_message_at"]) <= utcnow()
    # and the export keeps the span
    exported = call("me_export", "GET", "/me/export", who=ALICE)["json"]["summaries"]
    assert [(s["first_message_at"], s["last_message_at"]) for s in exported] == [
        (first["first_message_at"], first["last_message_at"]),
        (second["first_message_at"], second["last_message_at"]),
    ]


def test_the_session_summarizer_uses_the_stored_times_in_the_minds_timezone(call: Call) -> None:
    # Given a Bangkok mind and 15 messages said at 20:00 UTC on 31 December 2025, each about tomorrow
    headers = bangkok_mind()
    turns = [
        {"role": "user", "content": f"ข้อ {i}: พรุ่งนี้ต้องไปหาหมอฟัน", "created_at": "2025-12-31T20:00:00Z"}
        for i in range(15)
    ]
    assert ingest(call, {"sessionId": "eb", "messages": turns}, headers)["statusCode"] == 200
    # When the SessionSummaryDue event of the 15th message is consumed
    event = sample_event("summarize_session")
    event["detail"] = {"userId": "alice", "sessionId": "eb", "msgCount": 15, "mindId": BANGKOK_MIND}
    result = load_function("summarize_session").handler(event, LambdaContext())
    assert result["chunk_id"] == "sum:eb:chunk_1"
    # Then the chunk spans the stored times, and "tomorrow" is Bangkok's 2 January 2026
    (chunk,) = summaries_of(call, "eb", headers)
    assert (chunk["first_message_at"], chunk["last_message_at"]) == ("2025-12-31T20:00:00Z",) * 2
    assert "(2 ม.ค. 2569)" in chunk["summary"] and "พรุ่งนี้" not in chunk["summary"]


def test_chunks_written_before_times_have_no_span(call: Call, aws: Any) -> None:
    # Given a chunk as the second release stored it (no span)
    aws.put_item(
        TableName=TABLE,
        Item={
            "pk": {"S": "mem:alice"},
            "sk": {"S": "sum:old:chunk_1"},
            "summary": {"S": "an old summary"},
            "msg_count": {"N": "15"},
            "created_at": {"S": iso(datetime(2025, 1, 1, tzinfo=UTC))},
        },
    )
    # When listed, Then its span is null
    (chunk,) = summaries_of(call, "old")
    assert (chunk["first_message_at"], chunk["last_message_at"]) == (None, None)
