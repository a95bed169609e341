"""synapse.ai.dates: time expressions in Thai and English, resolved against when they were said.

Unless a test says otherwise, messages are said on Friday 4 December 2026 at 10:00 in Asia/Bangkok
(UTC+7, so a local day starts at 17:00 UTC the day before). That week runs Monday 30 November to
Sunday 6 December; the week before starts on Monday 23 November, the week after on Monday 7 December.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from synapse.ai.dates import (
    Dated,
    Mention,
    Period,
    dated_clauses,
    format_date,
    mentions,
    period_of,
    query_period,
    resolve,
)

BKK = ZoneInfo("Asia/Bangkok")
LA = ZoneInfo("America/Los_Angeles")
UTC_TZ = ZoneInfo("UTC")
SAID = datetime(2026, 12, 4, 10, 0, tzinfo=BKK)  # a Friday


def at(iso: str) -> datetime:
    return datetime.fromisoformat(iso)


def utc(iso: str) -> datetime:
    return datetime.fromisoformat(iso).replace(tzinfo=UTC)


def one(text: str, said: datetime = SAID, tz: ZoneInfo = BKK) -> Mention:
    found = mentions(text, said, tz)
    assert len(found) == 1, f"{text!r}: {[m.text for m in found]}"
    return found[0]


D = date  # short for the tables


# --- every expression, English ------------------------------------------------------------------------

ENGLISH = [
    # text, the expression found, grain, first local day, relative
    ("today", "today", "day", D(2026, 12, 4), True),
    ("I'm tired tonight", "tonight", "day", D(2026, 12, 4), True),
    ("I ran this morning", "this morning", "day", D(2026, 12, 4), True),
    ("I ate this afternoon", "this afternoon", "day", D(2026, 12, 4), True),
    ("I went yesterday", "yesterday", "day", D(2026, 12, 3), True),
    ("yesterday evening was calm", "yesterday evening", "day", D(2026, 12, 3), True),
    ("I slept badly last night", "last night", "day", D(2026, 12, 3), True),
    ("I fly tomorrow", "tomorrow", "day", D(2026, 12, 5), True),
    ("tomorrow night we eat out", "tomorrow night", "day", D(2026, 12, 5), True),
    ("I went the day before yesterday", "the day before yesterday", "day", D(2026, 12, 2), True),
    ("I fly the day after tomorrow", "the day after tomorrow", "day", D(2026, 12, 6), True),
    ("I was sick last week", "last week", "week", D(2026, 11, 23), True),
    ("I'm busy this week", "this week", "week", D(2026, 11, 30), True),
    ("I travel next week", "next week", "week", D(2026, 12, 7), True),
    ("I moved last month", "last month", "month", D(2026, 11, 1), True),
    ("I'm busy this month", "this month", "month", D(2026, 12, 1), True),
    ("I start next month", "next month", "month", D(2027, 1, 1), True),
    ("I graduated last year", "last year", "year", D(2025, 1, 1), True),
    ("I turn 40 this year", "this year", "year", D(2026, 1, 1), True),
    ("I retire next year", "next year", "year", D(2027, 1, 1), True),
    ("I moved in March", "March", "month", D(2026, 3, 1), True),
    ("I moved in March 2025", "March 2025", "month", D(2025, 3, 1), False),
    ("I moved in early March", "March", "month", D(2026, 3, 1), True),
    ("I moved in mid-March", "March", "month", D(2026, 3, 1), True),
    ("I went to Japan last March", "last March", "month", D(2026, 3, 1), True),
    ("I went to Japan this March", "this March", "month", D(2026, 3, 1), True),
    ("I go to Japan next March", "next March", "month", D(2027, 3, 1), True),
    ("I go to Japan in March next year", "March next year", "month", D(2027, 3, 1), True),
    ("March 3 was fun", "March 3", "day", D(2026, 3, 3), True),
    ("I met her on 3 March", "3 March", "day", D(2026, 3, 3), True),
    ("I met her on March 3rd", "March 3rd", "day", D(2026, 3, 3), True),
    ("I met her on the 3rd of March", "the 3rd of March", "day", D(2026, 3, 3), True),
    ("I met her on March 3, 2025", "March 3, 2025", "day", D(2025, 3, 3), False),
    ("I met her on 3 December 2026", "3 December 2026", "day", D(2026, 12, 3), False),
    ("We meet on Monday, 7 December 2026", "Monday, 7 December 2026", "day", D(2026, 12, 7), False),
    ("I met her on Dec 3", "Dec 3", "day", D(2026, 12, 3), True),
    ("I met her in Sept. 2025", "Sept. 2025", "month", D(2025, 9, 1), False),
    ("I ran on Monday", "Monday", "day", D(2026, 11, 30), True),
    ("I ran last Monday", "last Monday", "day", D(2026, 11, 30), True),
    ("I ran last Friday", "last Friday", "day", D(2026, 11, 27), True),
    ("I run next Monday", "next Monday", "day", D(2026, 12, 7), True),
    ("I run next Friday", "next Friday", "day", D(2026, 12, 11), True),
    ("I run this Friday", "this Friday", "day", D(2026, 12, 4), True),
    ("I run this Saturday", "this Saturday", "day", D(2026, 12, 5), True),
    ("I ran this past Tuesday", "this past Tuesday", "day", D(2026, 12, 1), True),
    ("I started 3 days ago", "3 days ago", "day", D(2026, 12, 1), True),
    ("I started a couple of days ago", "a couple of days ago", "day", D(2026, 12, 2), True),
    ("I started a week ago", "a week ago", "week", D(2026, 11, 23), True),
    ("I started 2 weeks ago", "2 weeks ago", "week", D(2026, 11, 16), True),
    ("I started six months ago", "six months ago", "month", D(2026, 6, 1), True),
    ("I started two years ago", "two years ago", "year", D(2024, 1, 1), True),
    ("I leave in 3 days", "in 3 days", "day", D(2026, 12, 7), True),
    ("I leave in 2 weeks", "in 2 weeks", "week", D(2026, 12, 14), True),
    ("I leave in a month", "in a month", "month", D(2027, 1, 1), True),
    ("I leave 10 days from now", "10 days from now", "day", D(2026, 12, 14), True),
    ("the report is due 2026-03-14", "2026-03-14", "day", D(2026, 3, 14), False),
    ("the log says 2026-03-14T09:00Z", "2026-03-14", "day", D(2026, 3, 14), False),
    ("I moved here in 2025", "2025", "year", D(2025, 1, 1), False),
    ("I have lived here since 2019", "2019", "year", D(2019, 1, 1), False),
]


@pytest.mark.parametrize(("text", "expression", "grain", "first", "relative"), ENGLISH)
def test_english_expressions(text: str, expression: str, grain: str, first: date, relative: bool) -> None:
    # Given an English message said on Friday 4 December 2026 in Bangkok
    # When its time expressions are found
    m = one(text)
    # Then the one expression names the expected period, in local days
    assert (m.text, m.period.grain, m.period.local_start, m.relative) == (expression, grain, first, relative)
    assert text[m.start : m.end] == m.text
    assert m.period == period_of(first, grain, BKK)


# --- every expression, Thai ---------------------------------------------------------------------------

THAI = [
    ("วันนี้ฝนตก", "วันนี้", "day", D(2026, 12, 4), True),
    ("คืนนี้ไปดูหนัง", "คืนนี้", "day", D(2026, 12, 4), True),
    ("เมื่อเช้ากินกาแฟ", "เมื่อเช้า", "day", D(2026, 12, 4), True),
    ("เมื่อวานไปหาหมอ", "เมื่อวาน", "day", D(2026, 12, 3), True),
    ("เมื่อวานนี้ไปหาหมอ", "เมื่อวานนี้", "day", D(2026, 12, 3), True),
    ("เมื่อคืนนอนไม่หลับ", "เมื่อคืน", "day", D(2026, 12, 3), True),
    ("เมื่อวานซืนไปทะเล", "เมื่อวานซืน", "day", D(2026, 12, 2), True),
    ("พรุ่งนี้ไปประชุม", "พรุ่งนี้", "day", D(2026, 12, 5), True),
    ("มะรืนไปเชียงใหม่", "มะรืน", "day", D(2026, 12, 6), True),
    ("มะรืนนี้ไปเชียงใหม่", "มะรืนนี้", "day", D(2026, 12, 6), True),
    ("สัปดาห์นี้งานเยอะ", "สัปดาห์นี้", "week", D(2026, 11, 30), True),
    ("อาทิตย์นี้งานเยอะ", "อาทิตย์นี้", "week", D(2026, 11, 30), True),
    ("สัปดาห์ที่แล้วไม่สบาย", "สัปดาห์ที่แล้ว", "week", D(2026, 11, 23), True),
    ("อาทิตย์ที่แล้วไม่สบาย", "อาทิตย์ที่แล้ว", "week", D(2026, 11, 23), True),
    ("อาทิตย์ก่อนไม่สบาย", "อาทิตย์ก่อน", "week", D(2026, 11, 23), True),
    ("สัปดาห์หน้าไปญี่ปุ่น", "สัปดาห์หน้า", "week", D(2026, 12, 7), True),
    ("อาทิตย์หน้าไปญี่ปุ่น", "อาทิตย์หน้า", "week", D(2026, 12, 7), True),
    ("เดือนนี้ยุ่งมาก", "เดือนนี้", "month", D(2026, 12, 1), True),
    ("ย้ายบ้านเดือนที่แล้ว", "เดือนที่แล้ว", "month", D(2026, 11, 1), True),
    ("ย้ายบ้านเดือนก่อน", "เดือนก่อน", "month", D(2026, 11, 1), True),
    ("เดือนหน้าเริ่มงานใหม่", "เดือนหน้า", "month", D(2027, 1, 1), True),
    ("ปีนี้อายุ 30", "ปีนี้", "year", D(2026, 1, 1), True),
    ("ปีที่แล้วไปญี่ปุ่น", "ปีที่แล้ว", "year", D(2025, 1, 1), True),
    ("ปีก่อนไปญี่ปุ่น", "ปีก่อน", "year", D(2025, 1, 1), True),
    ("ปีหน้าจะแต่งงาน", "ปีหน้า", "year", D(2027, 1, 1), True),
    ("อีก 3 วันสอบ", "อีก 3 วัน", "day", D(2026, 12, 7), True),
    ("อีกสามวันสอบ", "อีกสามวัน", "day", D(2026, 12, 7), True),
    ("อีก 2 สัปดาห์ย้ายบ้าน", "อีก 2 สัปดาห์", "week", D(2026, 12, 14), True),
    ("อีก 3 เดือนเรียนจบ", "อีก 3 เดือน", "month", D(2027, 3, 1), True),
    ("3 วันก่อนไปหาหมอ", "3 วันก่อน", "day", D(2026, 12, 1), True),
    ("3 วันที่แล้วไปหาหมอ", "3 วันที่แล้ว", "day", D(2026, 12, 1), True),
    ("ไปหาหมอเมื่อ 3 วันก่อน", "เมื่อ 3 วันก่อน", "day", D(2026, 12, 1), True),
    ("สองวันก่อนไปหาหมอ", "สองวันก่อน", "day", D(2026, 12, 2), True),
    ("2 อาทิตย์ก่อนไปทะเล", "2 อาทิตย์ก่อน", "week", D(2026, 11, 16), True),
    ("ไปญี่ปุ่นเดือนมีนาคม", "เดือนมีนาคม", "month", D(2026, 3, 1), True),
    ("ไปญี่ปุ่นมีนาคม", "มีนาคม", "month", D(2026, 3, 1), True),
    ("ไปญี่ปุ่นเดือนมีนา", "เดือนมีนา", "month", D(2026, 3, 1), True),
    ("ไปญี่ปุ่นช่วง มี.ค.", "มี.ค.", "month", D(2026, 3, 1), True),
    ("ไปญี่ปุ่นมีนาคมปีหน้า", "มีนาคมปีหน้า", "month", D(2027, 3, 1), True),
    ("ไปญี่ปุ่นมีนาคมที่แล้ว", "มีนาคมที่แล้ว", "month", D(2026, 3, 1), True),
    ("ประชุม 14 มี.ค. 2569", "14 มี.ค. 2569", "day", D(2026, 3, 14), False),
    ("ประชุม 14 มีนาคม 2569", "14 มีนาคม 2569", "day", D(2026, 3, 14), False),
    ("ประชุมวันที่ 14 มีนาคม พ.ศ. 2569", "วันที่ 14 มีนาคม พ.ศ. 2569", "day", D(2026, 3, 14), False),
    ("ประชุม ๑๔ มี.ค. ๒๕๖๙", "๑๔ มี.ค. ๒๕๖๙", "day", D(2026, 3, 14), False),
    ("ประชุม 3 ธ.ค. 69", "3 ธ.ค. 69", "day", D(2026, 12, 3), False),
    ("ย้ายมา ธ.ค. 69", "ธ.ค. 69", "month", D(2026, 12, 1), False),
    ("ย้ายมาเดือนมีนาคม 2568", "เดือนมีนาคม 2568", "month", D(2025, 3, 1), False),
    ("ประชุมวันจันทร์ที่ 7 ธ.ค. 2569", "วันจันทร์ที่ 7 ธ.ค. 2569", "day", D(2026, 12, 7), False),
    ("ประชุม 14 มี.ค.", "14 มี.ค.", "day", D(2026, 3, 14), True),
    ("เกิดปี พ.ศ. 2530", "ปี พ.ศ. 2530", "year", D(1987, 1, 1), False),
    ("เกิด พ.ศ. 2530", "พ.ศ. 2530", "year", D(1987, 1, 1), False),
    ("เกิดปี 2530", "ปี 2530", "year", D(1987, 1, 1), False),
    ("เกิดปี ค.ศ. 1987", "ปี ค.ศ. 1987", "year", D(1987, 1, 1), False),
    ("เกิด ค.ศ. 1987", "ค.ศ. 1987", "year", D(1987, 1, 1), False),
    ("นัดวันที่ 14/3/2569", "14/3/2569", "day", D(2026, 3, 14), False),
    ("ไปหาหมอวันจันทร์", "วันจันทร์", "day", D(2026, 11, 30), True),
    ("ไปหาหมอวันจันทร์นี้", "วันจันทร์นี้", "day", D(2026, 12, 7), True),
    ("ไปหาหมอวันจันทร์หน้า", "วันจันทร์หน้า", "day", D(2026, 12, 7), True),
    ("ไปหาหมอวันจันทร์ที่แล้ว", "วันจันทร์ที่แล้ว", "day", D(2026, 11, 30), True),
    ("วันจันทร์ก่อน ไปหาหมอ", "วันจันทร์ก่อน", "day", D(2026, 11, 30), True),
    ("ไปหาหมอวันอังคาร", "วันอังคาร", "day", D(2026, 12, 1), True),
    ("ไปหาหมอวันพุธ", "วันพุธ", "day", D(2026, 12, 2), True),
    ("ไปหาหมอวันพฤหัส", "วันพฤหัส", "day", D(2026, 12, 3), True),
    ("ไปหาหมอวันพฤหัสบดีที่แล้ว", "วันพฤหัสบดีที่แล้ว", "day", D(2026, 12, 3), True),
    ("ไปหาหมอวันศุกร์", "วันศุกร์", "day", D(2026, 12, 4), True),
    ("ไปหาหมอวันเสาร์ที่แล้ว", "วันเสาร์ที่แล้ว", "day", D(2026, 11, 28), True),
    ("ไปหาหมอวันอาทิตย์", "วันอาทิตย์", "day", D(2026, 11, 29), True),
    ("ไปหาหมอวันอาทิตย์นี้", "วันอาทิตย์นี้", "day", D(2026, 12, 6), True),
    ("ไปหาหมอวันอาทิตย์หน้า", "วันอาทิตย์หน้า", "day", D(2026, 12, 13), True),
    ("เจอกันศุกร์หน้า", "ศุกร์หน้า", "day", D(2026, 12, 11), True),
    ("ไปหาหมอวันที่ 14", "วันที่ 14", "day", D(2026, 11, 14), True),
]


@pytest.mark.parametrize(("text", "expression", "grain", "first", "relative"), THAI)
def test_thai_expressions(text: str, expression: str, grain: str, first: date, relative: bool) -> None:
    # Given a Thai message said on Friday 4 December 2026 in Bangkok
    # When its time expressions are found
    m = one(text)
    # Then the one expression names the expected period (Thai digits keep the text's own spans)
    assert (m.text, m.period.grain, m.period.local_start, m.relative) == (expression, grain, first, relative)
    assert text[m.start : m.end] == m.text


TH_MONTHS = ["มกราคม", "กุมภาพันธ์", "มีนาคม", "เมษายน", "พฤษภาคม", "มิถุนายน", "กรกฎาคม", "สิงหาคม", "กันยายน", "ตุลาคม", "พฤศจิกายน", "ธันวาคม"]  # fmt: skip
TH_ABBR = ["ม.ค.", "ก.พ.", "มี.ค.", "เม.ย.", "พ.ค.", "มิ.ย.", "ก.ค.", "ส.ค.", "ก.ย.", "ต.ค.", "พ.ย.", "ธ.ค."]


@pytest.mark.parametrize("month", range(1, 13))
def test_every_thai_month_full_and_abbreviated(month: int) -> None:
    # Given each month written in full after เดือน, and abbreviated with a day and a Buddhist Era year
    full = one(f"ไปเที่ยวเดือน{TH_MONTHS[month - 1]}")
    dated = one(f"ไปเที่ยว 2 {TH_ABBR[month - 1]} 2568")
    # Then the first is that month of 2026 (the latest one at or before December 2026), the second that day of 2025
    assert (full.period.grain, full.period.local_start) == ("month", D(2026, month, 1))
    assert (dated.period.grain, dated.period.local_start, dated.relative) == ("day", D(2025, month, 2), False)


def test_mentions_come_left_to_right_with_their_spans() -> None:
    # Given a message with three expressions
    text = "Yesterday I booked a trip for next week, and I pay on 2026-12-20."
    # When they are found
    found = mentions(text, SAID, BKK)
    # Then they come in order, each with its span in the text
    assert [m.text for m in found] == ["Yesterday", "next week", "2026-12-20"]
    assert all(text[m.start : m.end] == m.text for m in found)
    assert [m.relative for m in found] == [True, True, False]


# --- tense: a month or weekday without a qualifier -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "said", "first"),
    [
        ("I went to Japan in March", SAID, D(2026, 3, 1)),
        ("I went to Japan in March", at("2026-02-10T10:00+07:00"), D(2025, 3, 1)),
        ("I went to Japan in March", at("2026-03-20T10:00+07:00"), D(2026, 3, 1)),
        ("I will go to Japan in March", SAID, D(2027, 3, 1)),
        ("I'm going to Japan in March", SAID, D(2027, 3, 1)),
        ("I plan to visit Japan in March", SAID, D(2027, 3, 1)),
        ("I'll be in Japan in December", SAID, D(2026, 12, 1)),
        ("ไปญี่ปุ่นเดือนมีนาคม", SAID, D(2026, 3, 1)),
        ("จะไปญี่ปุ่นเดือนมีนาคม", SAID, D(2027, 3, 1)),
        ("กำลังจะไปญี่ปุ่นเดือนมีนาคม", SAID, D(2027, 3, 1)),
        ("ผมจะไปญี่ปุ่นเมษานี้", SAID, D(2027, 4, 1)),
        ("ผมไปญี่ปุ่นเมษานี้", SAID, D(2026, 4, 1)),
    ],
)
def test_a_month_without_a_year_follows_the_clauses_tense(text: str, said: datetime, first: date) -> None:
    # Given a month named without a year, in a past or a future clause
    # When it is resolved, Then it is the latest one at or before the day said, or the first at or after
    assert one(text, said).period.local_start == first


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("I saw the dentist on Monday", D(2026, 11, 30)),
        ("I will see the dentist on Monday", D(2026, 12, 7)),
        ("I have to see the dentist on Monday", D(2026, 12, 7)),
        ("The meeting was on Friday", D(2026, 12, 4)),  # the day said counts
        ("The party was on Dec 24", D(2025, 12, 24)),
        ("The party will be on Dec 24", D(2026, 12, 24)),
        ("ไปหาหมอวันจันทร์", D(2026, 11, 30)),
        ("ต้องไปหาหมอวันจันทร์", D(2026, 12, 7)),
        ("นัดหมอวันจันทร์", D(2026, 12, 7)),
        ("จะไปหาหมอวันที่ 14", D(2026, 12, 14)),
        ("ถูกต้อง ไปหาหมอวันจันทร์", D(2026, 11, 30)),  # ถูกต้อง ("right") is not ต้อง ("must")
        ("ผมถนัดขวา ไปหาหมอวันจันทร์", D(2026, 11, 30)),  # ถนัด ("skilled") is not นัด ("appointment")
        ("I sat next to Ann on Monday", D(2026, 11, 30)),  # "next to" is a place
        ("I may go to the gym on Monday", D(2026, 12, 7)),
    ],
)
def test_a_weekday_or_day_without_a_qualifier_follows_the_clauses_tense(text: str, day: date) -> None:
    assert one(text).period.local_start == day


def test_tense_is_read_in_each_clause_not_the_whole_message() -> None:
    # Given a past sentence and a future one, each naming a weekday
    found = mentions("I went to the gym on Monday. I will fly on Tuesday.", SAID, BKK)
    # Then each weekday follows its own sentence
    assert [m.period.local_start for m in found] == [D(2026, 11, 30), D(2026, 12, 8)]
    found = mentions("เมื่อวานไปยิมวันจันทร์ พรุ่งนี้จะไปหาหมอวันอังคาร", SAID, BKK)
    days = [D(2026, 12, 3), D(2026, 11, 30), D(2026, 12, 5), D(2026, 12, 8)]
    assert [m.period.local_start for m in found] == days


# --- boundaries: the past, months, years, timezones ------------------------------------------------------


def test_messages_dated_in_the_past_resolve_against_their_own_time() -> None:
    # Given messages said on Sunday 15 June 2025
    said = at("2025-06-15T20:00+07:00")
    # Then every relative word counts from that day, not from today
    assert one("I went yesterday", said).period.local_start == D(2025, 6, 14)
    assert one("เมื่อวานไปหาหมอ", said).period.local_start == D(2025, 6, 14)
    assert one("I was sick last week", said).period.local_start == D(2025, 6, 2)
    assert one("ปีที่แล้วไปญี่ปุ่น", said).period.local_start == D(2024, 1, 1)
    assert resolve("I moved to Bangkok last month", said, BKK) == Dated(
        "I moved to Bangkok in May 2025", utc("2025-04-30T17:00")
    )
    assert resolve("ผมย้ายมากรุงเทพเมื่อเดือนที่แล้ว", said, BKK) == Dated(
        "ผมย้ายมากรุงเทพ (พ.ค. 2568)", utc("2025-04-30T17:00")
    )


def test_across_a_month_boundary() -> None:
    # Given messages said on 1 March 2026 (and on 1 March 2028, a leap year)
    said = at("2026-03-01T09:00+07:00")
    # Then yesterday is the last day of February
    assert one("I went yesterday", said).period.local_start == D(2026, 2, 28)
    assert one("เมื่อวานไปหาหมอ", said).period.local_start == D(2026, 2, 28)
    assert one("I started 3 days ago", said).period.local_start == D(2026, 2, 26)
    assert one("I moved last month", said).period.local_start == D(2026, 2, 1)
    assert one("I went yesterday", at("2028-03-01T09:00+07:00")).period.local_start == D(2028, 2, 29)


def test_across_a_year_boundary() -> None:
    # Given messages said on 1 January 2027, local time
    said = at("2027-01-01T09:00+07:00")
    # Then last month is December 2026, last year 2026, and this week straddles the two years
    assert one("I moved last month", said).period.local_start == D(2026, 12, 1)
    assert one("ย้ายบ้านเดือนที่แล้ว", said).period.local_start == D(2026, 12, 1)
    assert one("I graduated last year", said).period.local_start == D(2026, 1, 1)
    assert one("ปีที่แล้วไปญี่ปุ่น", said).period.local_start == D(2026, 1, 1)
    assert one("I went yesterday", said).period.local_start == D(2026, 12, 31)
    assert one("I was sick last week", said).period.local_start == D(2026, 12, 21)
    assert resolve("สัปดาห์นี้งานเยอะ", said, BKK).text == "งานเยอะ (สัปดาห์ 28 ธ.ค. 2569–3 ม.ค. 2570)"
    assert resolve("I moved last month", said, BKK).text == "I moved in December 2026"
    assert resolve("ย้ายบ้านเดือนที่แล้ว", said, BKK).text == "ย้ายบ้าน (ธ.ค. 2569)"


def test_the_local_date_decides_when_it_differs_from_utc() -> None:
    # Given 2026-12-31T20:00Z: already 1 January 2027 (03:00) in Bangkok, still 31 December in UTC
    said = utc("2026-12-31T20:00")
    # When "yesterday" is resolved in each timezone
    in_bangkok = one("I went yesterday", said, BKK).period
    in_utc = one("I went yesterday", said, UTC_TZ).period
    # Then each is the day before its own local date, and starts at that day's local midnight in UTC
    assert (in_bangkok.local_start, in_bangkok.start, in_bangkok.end) == (
        D(2026, 12, 31),
        utc("2026-12-30T17:00"),
        utc("2026-12-31T17:00"),
    )
    assert (in_utc.local_start, in_utc.start) == (D(2026, 12, 30), utc("2026-12-30T00:00"))
    rewritten = resolve("I went yesterday", said, BKK)
    assert rewritten == Dated("I went on 31 December 2026", utc("2026-12-30T17:00"))
    assert one("I retire next year", said, BKK).period.local_start == D(2028, 1, 1)
    assert one("I retire next year", said, UTC_TZ).period.local_start == D(2027, 1, 1)


def test_a_timezone_behind_utc() -> None:
    # Given 2027-01-01T05:00Z: still 31 December 2026 (21:00) in Los Angeles
    said = utc("2027-01-01T05:00")
    # Then today is 31 December there, tomorrow is New Year's Day starting at 08:00 UTC
    assert one("I'm tired today", said, LA).period.local_start == D(2026, 12, 31)
    tomorrow = one("I fly tomorrow", said, LA).period
    assert (tomorrow.local_start, tomorrow.start) == (D(2027, 1, 1), utc("2027-01-01T08:00"))
    assert one("I'm busy this year", said, LA).period.local_start == D(2026, 1, 1)
    assert resolve("I fly tomorrow", said, LA) == Dated("I fly on 1 January 2027", utc("2027-01-01T08:00"))


def test_a_naive_said_at_is_utc() -> None:
    assert one("I went yesterday", datetime(2026, 12, 31, 20, 0), BKK).period.local_start == D(2026, 12, 31)


# --- periods and formatting --------------------------------------------------------------------------------


def test_weeks_start_on_monday_and_periods_are_local_days_in_utc() -> None:
    # Given Wednesday 25 November 2026 in Bangkok
    week = period_of(D(2026, 11, 25), "week", BKK)
    # Then its week runs Monday 23 to Sunday 29 November, local midnight to local midnight
    assert week == Period(utc("2026-11-22T17:00"), utc("2026-11-29T17:00"), "week", D(2026, 11, 23))
    assert period_of(D(2026, 2, 14), "month", BKK).end == utc("2026-02-28T17:00")
    assert period_of(D(2026, 7, 4), "year", UTC_TZ) == Period(
        utc("2026-01-01T00:00"), utc("2027-01-01T00:00"), "year", D(2026, 1, 1)
    )
    assert week.contains(utc("2026-11-22T17:00")) and not week.contains(utc("2026-11-29T17:00"))


def test_a_day_when_clocks_change_is_its_local_length() -> None:
    # Given 8 March 2026 in Los Angeles, when clocks go forward
    day = period_of(D(2026, 3, 8), "day", LA)
    # Then the day is 23 hours long
    assert day.end - day.start == timedelta(hours=23)


@pytest.mark.parametrize(
    ("day", "grain", "lang", "text"),
    [
        (D(2026, 12, 3), "day", "th", "3 ธ.ค. 2569"),
        (D(2026, 12, 3), "day", "en", "3 December 2026"),
        (D(2026, 11, 17), "month", "th", "พ.ย. 2569"),
        (D(2026, 11, 17), "month", "en", "November 2026"),
        (D(2026, 11, 26), "week", "th", "สัปดาห์ 23–29 พ.ย. 2569"),
        (D(2026, 12, 2), "week", "th", "สัปดาห์ 30 พ.ย.–6 ธ.ค. 2569"),
        (D(2026, 12, 31), "week", "th", "สัปดาห์ 28 ธ.ค. 2569–3 ม.ค. 2570"),
        (D(2026, 11, 26), "week", "en", "the week of 23 November 2026"),
        (D(2026, 5, 5), "year", "th", "พ.ศ. 2569"),
        (D(2026, 5, 5), "year", "en", "2026"),
        (D(2025, 1, 1), "day", "th", "1 ม.ค. 2568"),
    ],
)
def test_format_date(day: date, grain: str, lang: str, text: str) -> None:
    assert format_date(day, grain, lang) == text


def test_format_date_rejects_an_unknown_grain() -> None:
    with pytest.raises(ValueError, match="grain"):
        format_date(D(2026, 1, 1), "decade", "en")


# --- rewriting ---------------------------------------------------------------------------------------------

EN_REWRITES = [
    ("I moved to Bangkok last month", "I moved to Bangkok in November 2026"),
    ("I went to the dentist yesterday", "I went to the dentist on 3 December 2026"),
    ("Yesterday I went to the dentist", "On 3 December 2026 I went to the dentist"),
    ("The party was last night", "The party was on the night of 3 December 2026"),
    ("We met last week", "We met in the week of 23 November 2026"),
    ("Last week was hard", "The week of 23 November 2026 was hard"),
    ("I visited Japan last year", "I visited Japan in 2025"),
    ("Since last month I run every day", "Since November 2026 I run every day"),
    ("I'll see her on Monday", "I'll see her on 7 December 2026"),
    ("I'll see her next Friday", "I'll see her on 11 December 2026"),
    ("I moved to Chiang Mai in March", "I moved to Chiang Mai in March 2026"),
    ("My exam will be on March 3rd", "My exam will be on 3 March 2027"),
    ("I started 3 days ago", "I started on 1 December 2026"),
    ("I fly to Rome in 2 weeks", "I fly to Rome in the week of 14 December 2026"),
    ("I was sick between Monday and Wednesday", "I was sick between 30 November 2026 and 2 December 2026"),
    ("I was born on 3 March 1990", "I was born on 3 March 1990"),
    ("I moved here in 2025", "I moved here in 2025"),
    ("I like coffee", "I like coffee"),
]


@pytest.mark.parametrize(("text", "rewritten"), EN_REWRITES)
def test_english_relative_words_become_absolute_phrases(text: str, rewritten: str) -> None:
    # Given an English message said on 4 December 2026
    # When it is resolved as one clause, Then relative words are replaced in place; absolute ones stay
    assert resolve(text, SAID, BKK).text == rewritten


TH_REWRITES = [
    ("เมื่อวานผมไปหาหมอฟัน", "ผมไปหาหมอฟัน (3 ธ.ค. 2569)"),
    ("ไปหาหมอฟันเมื่อวาน", "ไปหาหมอฟัน (3 ธ.ค. 2569)"),
    ("ผมย้ายมากรุงเทพเมื่อเดือนที่แล้ว", "ผมย้ายมากรุงเทพ (พ.ย. 2569)"),
    ("ผมไปเชียงใหม่ในเดือนที่แล้ว", "ผมไปเชียงใหม่ (พ.ย. 2569)"),
    ("สัปดาห์หน้าจะไปเชียงใหม่", "จะไปเชียงใหม่ (สัปดาห์ 7–13 ธ.ค. 2569)"),
    ("ปีที่แล้วผมไปญี่ปุ่น", "ผมไปญี่ปุ่น (พ.ศ. 2568)"),
    ("อีก ๓ วันจะสอบ", "จะสอบ (7 ธ.ค. 2569)"),
    ("ผมจะไปญี่ปุ่นเดือนมีนาคม", "ผมจะไปญี่ปุ่น (มี.ค. 2570)"),
    ("นัดหมอวันที่ 14 มี.ค.", "นัดหมอ (14 มี.ค. 2570)"),
    ("ผมไปหาหมอ เมื่อวาน ครับ", "ผมไปหาหมอ ครับ (3 ธ.ค. 2569)"),
    ("ตั้งแต่เดือนที่แล้วผมเลิกกาแฟ", "ตั้งแต่ เดือน พ.ย. 2569 ผมเลิกกาแฟ"),
    ("เมื่อวานกับวันนี้ฝนตก", "วันที่ 3 ธ.ค. 2569 กับ วันที่ 4 ธ.ค. 2569 ฝนตก"),
    ("ผมเกิด 14 มี.ค. 2530", "ผมเกิด 14 มี.ค. 2530"),
    ("ผมชอบกาแฟ", "ผมชอบกาแฟ"),
    ("เมื่อวาน", "3 ธ.ค. 2569"),
]


@pytest.mark.parametrize(("text", "rewritten"), TH_REWRITES)
def test_thai_relative_words_are_removed_and_the_date_appended(text: str, rewritten: str) -> None:
    # Given a Thai message said on 4 December 2026
    # When it is resolved as one clause
    # Then relative words give way to the date in parentheses (Buddhist Era, Thai month abbreviations)
    assert resolve(text, SAID, BKK).text == rewritten


def test_resolve_dates_the_text_by_its_first_period() -> None:
    assert resolve("ผมเกิด 14 มี.ค. 2530", SAID, BKK).valid_at == utc("1987-03-13T17:00")
    assert resolve("ไปหาหมอฟันเมื่อวาน", SAID, BKK).valid_at == utc("2026-12-02T17:00")
    assert resolve("I like coffee", SAID, BKK) == Dated("I like coffee", None)


def test_a_thai_name_in_an_english_sentence_keeps_the_english_style() -> None:
    assert resolve("I went to ศิริราช yesterday", SAID, BKK).text == "I went to ศิริราช on 3 December 2026"


# --- clauses -----------------------------------------------------------------------------------------------


def test_the_issues_message_splits_into_two_dated_clauses() -> None:
    # Given the Time issue's message, said on 4 December 2026 in Bangkok
    text = "เมื่อวานผมไปหาหมอฟันที่โรงพยาบาลศิริราช พรุ่งนี้ต้องไปประชุมที่เชียงราย"
    # When it is split into clauses
    clauses = dated_clauses(text, at("2026-12-04T10:00+07:00"), BKK)
    # Then each clause states its own day, in Thai, and is valid from that day's local midnight
    assert clauses == [
        Dated("ผมไปหาหมอฟันที่โรงพยาบาลศิริราช (3 ธ.ค. 2569)", utc("2026-12-02T17:00")),
        Dated("ต้องไปประชุมที่เชียงราย (5 ธ.ค. 2569)", utc("2026-12-04T17:00")),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a time at the end of its clause
        (
            "ผมไปหาหมอ เมื่อวาน ผมจะไปเชียงราย พรุ่งนี้",
            [("ผมไปหาหมอ (3 ธ.ค. 2569)", "2026-12-02T17:00"), ("ผมจะไปเชียงราย (5 ธ.ค. 2569)", "2026-12-04T17:00")],
        ),
        # a time alone before its clause
        (
            "เมื่อวาน ผมไปหาหมอ พรุ่งนี้ ผมจะไปเชียงราย",
            [("ผมไปหาหมอ (3 ธ.ค. 2569)", "2026-12-02T17:00"), ("ผมจะไปเชียงราย (5 ธ.ค. 2569)", "2026-12-04T17:00")],
        ),
        # no space, but แล้ว ("and then") right before the second time
        (
            "เมื่อวานไปหาหมอแล้วพรุ่งนี้จะไปประชุม",
            [("ไปหาหมอ (3 ธ.ค. 2569)", "2026-12-02T17:00"), ("จะไปประชุม (5 ธ.ค. 2569)", "2026-12-04T17:00")],
        ),
        # an absolute date keeps its words
        (
            "ผมเกิด 14 มี.ค. 2530 เมื่อวานไปหาหมอ",
            [("ผมเกิด 14 มี.ค. 2530", "1987-03-13T17:00"), ("ไปหาหมอ (3 ธ.ค. 2569)", "2026-12-02T17:00")],
        ),
        # a place after the clause's time stays with it
        (
            "เมื่อวานไปหาหมอ ที่ศิริราช พรุ่งนี้ไปประชุม ที่เชียงราย",
            [("ไปหาหมอ ที่ศิริราช (3 ธ.ค. 2569)", "2026-12-02T17:00"), ("ไปประชุม ที่เชียงราย (5 ธ.ค. 2569)", "2026-12-04T17:00")],
        ),
        (
            "Yesterday I went to the dentist, and tomorrow I fly to Rome.",
            [("On 3 December 2026 I went to the dentist", "2026-12-02T17:00"), ("on 5 December 2026 I fly to Rome.", "2026-12-04T17:00")],
        ),
        (
            "yesterday I saw Tom and tomorrow I see Ann",
            [("on 3 December 2026 I saw Tom", "2026-12-02T17:00"), ("on 5 December 2026 I see Ann", "2026-12-04T17:00")],
        ),
        (
            "On Monday, I went to the gym, and next Friday I will run a race.",
            [("On 30 November 2026, I went to the gym", "2026-11-29T17:00"), ("on 11 December 2026 I will run a race.", "2026-12-10T17:00")],
        ),
        # a sentence naming no time after a sentence end is a clause of its own
        (
            "My name is Ann. Yesterday I saw the dentist. Tomorrow I fly to Rome!",
            [("My name is Ann.", None), ("On 3 December 2026 I saw the dentist.", "2026-12-02T17:00"), ("On 5 December 2026 I fly to Rome!", "2026-12-04T17:00")],
        ),
    ],
)  # fmt: skip
def test_clauses_naming_different_times_are_split(text: str, expected: list[tuple[str, str | None]]) -> None:
    clauses = dated_clauses(text, SAID, BKK)
    assert [(c.text, c.valid_at) for c in clauses] == [(t, utc(v) if v else None) for t, v in expected]


@pytest.mark.parametrize(
    ("text", "clause"),
    [
        ("ผมไปหาหมอฟันเมื่อวาน ที่โรงพยาบาลศิริราช", Dated("ผมไปหาหมอฟัน ที่โรงพยาบาลศิริราช (3 ธ.ค. 2569)", utc("2026-12-02T17:00"))),
        ("เมื่อวานไปหาหมอ เมื่อวานไปกินข้าว", Dated("ไปหาหมอ ไปกินข้าว (3 ธ.ค. 2569)", utc("2026-12-02T17:00"))),
        ("I moved last month. I love it here.", Dated("I moved in November 2026. I love it here.", utc("2026-10-31T17:00"))),
        ("ผมชื่อสมชาย", Dated("ผมชื่อสมชาย", None)),
        ("My name is Ann, I live in Paris.", Dated("My name is Ann, I live in Paris.", None)),
    ],
)  # fmt: skip
def test_a_text_naming_one_time_or_none_stays_one_clause(text: str, clause: Dated) -> None:
    assert dated_clauses(text, SAID, BKK) == [clause]


def test_one_clause_naming_two_times_keeps_both_in_place() -> None:
    # Given two periods with no separator between them
    clauses = dated_clauses("I moved to Bangkok last month and start a new job next week", SAID, BKK)
    # Then it stays one clause, both rewritten, dated by the first
    assert clauses == [
        Dated(
            "I moved to Bangkok in November 2026 and start a new job in the week of 7 December 2026",
            utc("2026-10-31T17:00"),
        )
    ]


# --- query periods -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "reference", "grain", "first"),
    [
        ("where did I live in March", SAID, "month", D(2026, 3, 1)),
        ("where did I live in March", at("2026-02-10T10:00+07:00"), "month", D(2025, 3, 1)),
        ("where did I live in March", at("2026-03-10T10:00+07:00"), "month", D(2026, 3, 1)),
        ("where will I be in March", SAID, "month", D(2027, 3, 1)),
        ("what am I doing next March", SAID, "month", D(2027, 3, 1)),
        ("what did I do last week", SAID, "week", D(2026, 11, 23)),
        ("what happened yesterday", SAID, "day", D(2026, 12, 3)),
        ("what do I have on Monday", SAID, "day", D(2026, 11, 30)),
        ("what will I do on Monday", SAID, "day", D(2026, 12, 7)),
        ("what do I have next Monday", SAID, "day", D(2026, 12, 7)),
        ("what did I do in 2025", SAID, "year", D(2025, 1, 1)),
        ("what did I do in 2025, in March 2025", SAID, "month", D(2025, 3, 1)),  # the most specific
        ("เมื่อวานกินอะไร", SAID, "day", D(2026, 12, 3)),
        ("สัปดาห์ที่แล้วไปไหนมา", SAID, "week", D(2026, 11, 23)),
        ("เดือนมีนาคมไปไหนมา", SAID, "month", D(2026, 3, 1)),
        ("เดือนมีนาคมจะไปไหน", SAID, "month", D(2027, 3, 1)),
        ("เดือนหน้ามีนัดอะไร", SAID, "month", D(2027, 1, 1)),
        ("ปีที่แล้วไปเที่ยวที่ไหน", SAID, "year", D(2025, 1, 1)),
        ("วันจันทร์ทำอะไร", SAID, "day", D(2026, 11, 30)),
        ("วันจันทร์จะทำอะไร", SAID, "day", D(2026, 12, 7)),
        # the month May is no modal "may", "May I" is a request, "next to" is a place: none is a future cue
        ("what did I do in May", SAID, "month", D(2026, 5, 1)),
        ("what will I do in May", SAID, "month", D(2027, 5, 1)),
        ("May I know where I lived in March", SAID, "month", D(2026, 3, 1)),
        ("who sat next to me on Monday", SAID, "day", D(2026, 11, 30)),
        # 2027-01-01T05:00Z is already 1 January in Bangkok
        ("what did I do yesterday", utc("2027-01-01T05:00"), "day", D(2026, 12, 31)),
    ],
)
def test_query_period(query: str, reference: datetime, grain: str, first: date) -> None:
    # Given a question asked at `reference` in Bangkok
    period = query_period(query, reference, BKK)
    # Then the period it names is resolved like a past statement, unless it speaks of the future
    assert period == period_of(first, grain, BKK)


def test_query_period_uses_the_given_timezone() -> None:
    # Given 2027-01-01T05:00Z: 31 December 2026 in Los Angeles
    period = query_period("what did I do yesterday", utc("2027-01-01T05:00"), LA)
    assert period is not None
    assert (period.local_start, period.start) == (D(2026, 12, 30), utc("2026-12-30T08:00"))


@pytest.mark.parametrize(
    "query",
    [
        "what is my name",
        "what do I do every Monday",
        "what do I usually do on Mondays",
        "ทุกวันจันทร์ทำอะไร",
        "ทุกวันนี้ทำงานที่ไหน",
        "when was the last time I saw the dentist",
        "what did I do a few days ago",
        "what happened the next day",
    ],
)
def test_a_query_naming_no_period_of_the_users_life_has_none(query: str) -> None:
    assert query_period(query, SAID, BKK) is None


# --- false positives ---------------------------------------------------------------------------------------

NOT_DATES = [
    "I may go", "May I ask something?", "we march to the beat", "Soldiers march 10 miles a day",
    "I sat in the sun", "the last time I saw her", "at last I found it", "the last week of the trip was fun",
    "wait a second", "the second one is better", "I have 3 cats", "I paid 2025 baht", "room 1203",
    "I stayed 3 days", "every Monday I swim", "Mondays are hard", "a few days ago", "several weeks ago",
    "in a few days", "the next day we left", "June said hi", "I love June", "an august institution",
    "version 2.3.10", "call 555-2026", "3 hours ago", "3/4/2026", "mar 3 the surface",
    "พระจันทร์สวยมาก", "ดาวศุกร์สว่าง", "ดาวอังคาร", "พระอาทิตย์ตก", "ดาวพฤหัสนี้สว่าง", "ทุกวันนี้ผมทำงานหนัก",
    "หลายปีก่อน", "ไม่กี่วันก่อน", "สองสามวันก่อน", "ราคา 2569 บาท", "ห้องพัก 2569", "สอบ ก.พ.", "ตุลาการ",
    "กันยาเป็นเพื่อนผม", "ทุกวันจันทร์ไปยิม", "ทุกปีไปเที่ยว", "ถูกต้องครับ", "อายุ 30 ปี", "ชั้น 14 ห้อง 3",
]  # fmt: skip


@pytest.mark.parametrize("text", NOT_DATES)
def test_words_that_only_look_like_dates_are_not_mentions(text: str) -> None:
    # Given modal "may", the verb "march", "sun"/"sat", "the last time", numbers, recurrences, vague spans,
    # and Thai words holding month or weekday syllables (the moon, Venus, the judiciary)
    # When time expressions are looked for, Then there are none, and nothing is rewritten
    assert mentions(text, SAID, BKK) == []
    assert resolve(text, SAID, BKK) == Dated(text, None)


@pytest.mark.parametrize(
    ("text", "expression"),
    [
        ("I may go in May", "May"),
        ("May I come on Monday?", "Monday"),
        ("the last time was in March", "March"),
        ("we march on 3 May", "3 May"),
        ("ไปยิมทุกวันจันทร์ เมื่อวานก็ไป", "เมื่อวาน"),
        ("ดาวศุกร์สว่างเมื่อคืน", "เมื่อคืน"),
    ],
)
def test_only_the_real_date_is_found_next_to_a_false_friend(text: str, expression: str) -> None:
    assert one(text).text == expression


# --- cold start --------------------------------------------------------------------------------------------


def test_importing_compiles_no_pattern_and_warm_compiles_them_all() -> None:
    # Given a fresh interpreter (patterns compiled at import would slow every cold start)
    script = (
        "from synapse.ai import dates\n"
        "patterns = [rx for rx, _ in dates._RULES]\n"
        "assert all(rx._compiled is None for rx in patterns)\n"
        "dates.warm()\n"
        "assert all(rx._compiled is not None for rx in patterns)\n"
        "assert all(v._compiled is not None for v in vars(dates).values() if isinstance(v, dates._Rx))\n"
    )
    # When the module is imported, then warmed, Then nothing is compiled before and everything after
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "layers" / "common" / "python"),
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
