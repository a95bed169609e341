"""Time on the way in, offline: the rule extractor and the extractive summary read each message's
`created_at` in a timezone, write relative dates as the dates they meant, and give `valid_at`."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from synapse.ai.facts import RuleExtractor
from synapse.ai.summaries import ExtractiveSummarizer
from synapse.core.models.base import Category, Role
from synapse.core.models.chat import ChatMessage as Message
from synapse.core.models.chat import ExtractedNugget

BKK = "Asia/Bangkok"
THAI_ISSUE = "เมื่อวานผมไปหาหมอฟันที่โรงพยาบาลศิริราช พรุ่งนี้ต้องไปประชุมที่เชียงราย"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def said(text: str, at: str, role: Role = Role.user) -> Message:
    return Message(role=role, content=text, created_at=utc(at))


def extract(*messages: Message, timezone: str = BKK) -> list[ExtractedNugget]:
    return RuleExtractor().extract(list(messages), [], timezone=timezone)


def contents(nuggets: list[ExtractedNugget]) -> list[tuple[str, str, datetime | None]]:
    return [
        (n.key if not n.key.startswith("context_") else "context", n.content, n.valid_at) for n in nuggets
    ]


# --- the rule extractor ---------------------------------------------------------------------------------


def test_a_thai_message_naming_two_days_gives_two_dated_nuggets() -> None:
    # Given the issue's message, said on 4 December 2026 at 10:00 in Bangkok
    nuggets = extract(said(THAI_ISSUE, "2026-12-04T03:00"))
    # When extracted, Then each clause is its own context nugget, its day written in Thai (Buddhist
    # Era) instead of "yesterday" / "tomorrow", and valid at 00:00 of that day in Bangkok
    assert contents(nuggets) == [
        ("context", "ผมไปหาหมอฟันที่โรงพยาบาลศิริราช (3 ธ.ค. 2569)", utc("2026-12-02T17:00")),
        ("context", "ต้องไปประชุมที่เชียงราย (5 ธ.ค. 2569)", utc("2026-12-04T17:00")),
    ]
    assert {n.category for n in nuggets} == {Category.context}
    assert len({n.key for n in nuggets}) == 2


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("I moved to Bangkok last month", "Moved to Bangkok in November 2026"),
        ("Last month, I moved to Bangkok", "Moved to Bangkok in November 2026"),
        ("ผมย้ายไปอยู่เชียงใหม่เมื่อเดือนที่แล้ว", "ย้ายไปอยู่ เชียงใหม่ (พ.ย. 2569)"),
        ("เดือนที่แล้ว ผมย้ายไปอยู่เชียงใหม่", "ย้ายไปอยู่ เชียงใหม่ (พ.ย. 2569)"),
    ],
)
def test_a_move_keeps_its_key_and_states_the_month_it_named(text: str, content: str) -> None:
    # Given a move said on 4 December 2026, When extracted
    (nugget,) = extract(said(text, "2026-12-04T03:00"))
    # Then it is still the location slot, but says when (not "Lives in Bangkok last month"), in its
    # own language, and is valid from the first of that month in Bangkok
    assert (nugget.category, nugget.key, nugget.content) == (Category.identity, "user_location", content)
    assert nugget.valid_at == utc("2026-10-31T17:00")


def test_a_fact_keeps_the_word_that_ties_it_to_its_date() -> None:
    # Given facts "since" a relative date, in English and Thai, When extracted
    found = contents(
        extract(said("I work at Grab since last month", "2026-12-04T03:00"))
        + extract(said("ผมทำงานที่ SCB ตั้งแต่ปีที่แล้ว", "2026-12-04T03:00"))
    )
    # Then the link stays and the date is absolute
    assert found == [
        ("user_workplace", "Works at Grab since November 2026", utc("2026-10-31T17:00")),
        ("user_workplace", "ทำงานที่ SCB ตั้งแต่ พ.ศ. 2568", utc("2024-12-31T17:00")),
    ]


def test_nuggets_of_a_message_naming_no_time_are_valid_from_when_it_was_said() -> None:
    # Given a message of last year with facts and other content, naming no time
    text = "My name is Ann, I live in Paris. We are rewriting the billing service in Go."
    nuggets = extract(said(text, "2025-06-10T08:30"))
    # When extracted, Then every nugget is valid from the moment it was said, its words unchanged
    assert contents(nuggets) == [
        ("user_name", "Name: Ann", utc("2025-06-10T08:30")),
        ("user_location", "Lives in Paris", utc("2025-06-10T08:30")),
        ("context", text, utc("2025-06-10T08:30")),
    ]


def test_a_name_is_not_dated_by_the_event_told_beside_it() -> None:
    # Given a name and a visit yesterday in one Thai sentence, When extracted
    nuggets = extract(said("ผมชื่อสมชาย เมื่อวานไปหาหมอ", "2026-12-04T03:00"))
    # Then the name is who the user is (no date), and the visit is kept with its day
    assert contents(nuggets) == [
        ("user_name", "ชื่อ สมชาย", utc("2026-12-04T03:00")),
        ("context", "ผมชื่อสมชาย ไปหาหมอ (3 ธ.ค. 2569)", utc("2026-12-02T17:00")),
    ]


@pytest.mark.parametrize(
    ("text", "at", "timezone", "content", "valid_at"),
    [
        # a message of 2025 across a year boundary: said on 1 January 2025, "yesterday" is 2024
        ("ผมไปเชียงใหม่เมื่อวาน", "2025-01-01T10:00", "UTC", "ผมไปเชียงใหม่ (31 ธ.ค. 2567)", "2024-12-31T00:00"),
        ("We signed the lease last month", "2025-01-01T10:00", "UTC",
         "We signed the lease in December 2024", "2024-12-01T00:00"),
        # across a month boundary (2025 is no leap year)
        ("I fell ill yesterday", "2025-03-01T09:00", "UTC", "I fell ill on 28 February 2025", "2025-02-28T00:00"),
        # 20:00 UTC on 31 December 2025 is already 1 January 2026 in Bangkok
        ("พรุ่งนี้ต้องไปหาหมอฟัน", "2025-12-31T20:00", BKK, "ต้องไปหาหมอฟัน (2 ม.ค. 2569)", "2026-01-01T17:00"),
        ("พรุ่งนี้ต้องไปหาหมอฟัน", "2025-12-31T20:00", "UTC", "ต้องไปหาหมอฟัน (1 ม.ค. 2569)", "2026-01-01T00:00"),
        ("I have a dentist appointment tomorrow", "2025-12-31T20:00", BKK,
         "I have a dentist appointment on 2 January 2026", "2026-01-01T17:00"),
    ],
)  # fmt: skip
def test_relative_days_resolve_in_the_messages_own_time_and_timezone(
    text: str, at: str, timezone: str, content: str, valid_at: str
) -> None:
    # Given a message said at `at`, read in `timezone`, When extracted
    (nugget,) = extract(said(text, at), timezone=timezone)
    # Then its day is the one meant where the user lives
    assert (nugget.content, nugget.valid_at) == (content, utc(valid_at))


def test_the_same_words_on_two_days_are_two_memories_but_a_fact_is_one_slot() -> None:
    # Given "tomorrow I see the dentist" said on two days, and a move said on two days
    first = extract(said("พรุ่งนี้ต้องไปหาหมอฟัน", "2026-11-02T03:00"))
    second = extract(said("พรุ่งนี้ต้องไปหาหมอฟัน", "2026-12-02T03:00"))
    moved = extract(said("I moved to Bangkok last month", "2026-06-01T03:00"))
    again = extract(said("I moved to Chiang Mai last month", "2026-12-04T03:00"))
    # When extracted, Then the two appointments are two context memories (different days), and the
    # moves update one location slot
    assert first[0].key != second[0].key
    assert (moved[0].key, again[0].key) == ("user_location", "user_location")
    assert again[0].content == "Moved to Chiang Mai in November 2026"


def test_without_a_time_the_words_are_kept_as_said() -> None:
    # Given a message that carries no time (a library caller's), When extracted
    (nugget,) = RuleExtractor().extract([Message(role=Role.user, content="พรุ่งนี้ต้องไปหาหมอฟัน")], [])
    # Then nothing is guessed: the words stay, and valid_at is left to the caller
    assert (nugget.content, nugget.valid_at) == ("พรุ่งนี้ต้องไปหาหมอฟัน", None)


# --- the extractive summary -----------------------------------------------------------------------------


def test_the_extractive_summary_writes_relative_dates_as_dates() -> None:
    # Given the issue's message and a move, said on 4 December 2026 in Bangkok, with chatter
    messages = [
        said(THAI_ISSUE, "2026-12-04T03:00"),
        said("ok", "2026-12-04T03:01"),
        said("I moved to Bangkok last month", "2026-12-04T03:02"),
    ]
    # When summarised
    summary = ExtractiveSummarizer().summarize(messages, timezone=BKK)
    # Then each clause is a line with its date (the Thai abbreviations are not cut at their dots)
    assert summary.split("\n") == [
        "ผมไปหาหมอฟันที่โรงพยาบาลศิริราช (3 ธ.ค. 2569)",
        "ต้องไปประชุมที่เชียงราย (5 ธ.ค. 2569)",
        "I moved to Bangkok in November 2026",
    ]
