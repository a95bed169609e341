"""bench/data/temporal (the Time issue's temporal recall set) and bench.temporal, without a server.

The data files are checked for shape and counts, every expected memory against its question's user
and period, the JSON against its hand-written source tables, the validator against broken copies of
the data, and the runner against a stub of the HTTP API.
"""

from __future__ import annotations

import copy
import re
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bench import temporal

UTC_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
THAI = re.compile(r"[\u0e00-\u0e7f]")


@pytest.fixture(scope="module")
def data() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return temporal.load()


# --- the files --------------------------------------------------------------------------------


def test_the_files_load_and_the_validator_finds_nothing(data: tuple[list, list]) -> None:
    # Given the committed files / When they are validated / Then there is no problem
    memories, questions = data
    assert temporal.validate(memories, questions) == []


def test_the_json_files_are_what_the_source_tables_build() -> None:
    # Given the hand-written tables / When built / Then they give exactly the committed JSON
    mem_doc, q_doc = temporal.build()
    assert (temporal.DATA / "memories.json").read_text(encoding="utf-8") == temporal.dump(mem_doc)
    assert (temporal.DATA / "questions.json").read_text(encoding="utf-8") == temporal.dump(q_doc)


def test_three_users_write_thai_english_and_both_with_150_memories_each_over_a_year(
    data: tuple[list, list],
) -> None:
    memories, _ = data
    by_user: dict[str, list[dict[str, Any]]] = {}
    for m in memories:
        by_user.setdefault(m["user"], []).append(m)
    assert set(by_user) == {"nok", "dan", "ploy"}
    for user, mine in by_user.items():
        assert len(mine) >= 150, user
        dates = sorted(m["valid_at"] for m in mine)
        assert dates[0] < "2025-12-08" and dates[-1] > "2026-12-24", user
    thai_share = {u: sum(bool(THAI.search(m["content"])) for m in ms) / len(ms) for u, ms in by_user.items()}
    latin_words = {
        u: sum(bool(re.search(r"[A-Za-z]{3,}", m["content"])) for m in ms) / len(ms)
        for u, ms in by_user.items()
    }
    assert thai_share["nok"] > 0.95 and thai_share["dan"] == 0.0
    assert thai_share["ploy"] > 0.8 and latin_words["ploy"] > 0.5


def test_every_memory_has_the_shape_post_memory_accepts(data: tuple[list, list]) -> None:
    memories, _ = data
    assert len({m["id"] for m in memories}) == len(memories)
    for m in memories:
        assert m["category"] in temporal.CATEGORIES
        assert re.fullmatch(r"^[a-z0-9][a-z0-9_]{0,99}$", m["key"])
        assert m["id"] == f"{m['user']}-{m['key']}"
        assert 0 < len(m["content"]) <= 8000 and len(m["tags"]) <= 20
        assert all(0 < len(t) <= 50 for t in m["tags"])
        assert UTC_Z.fullmatch(m["valid_at"])


def test_at_least_60_questions_in_each_language(data: tuple[list, list]) -> None:
    _, questions = data
    assert sum(q["lang"] == "th" for q in questions) >= 60
    assert sum(q["lang"] == "en" for q in questions) >= 60
    for q in questions:
        assert (q["lang"] == "th") == bool(THAI.search(q["question"])), q["id"]


def test_every_expected_memory_exists_belongs_to_the_user_and_lies_in_the_period(
    data: tuple[list, list],
) -> None:
    memories, questions = data
    by_id = {m["id"]: m for m in memories}
    for q in questions:
        assert UTC_Z.fullmatch(q["period"]["from"]) and UTC_Z.fullmatch(q["period"]["to"]), q["id"]
        start, end = (temporal.parse_time(q["period"][k]) for k in ("from", "to"))
        ref = temporal.parse_time(q["reference_time"])
        assert q["expected"], q["id"]
        for mid in q["expected"]:
            assert mid in by_id and by_id[mid]["user"] == q["user"], (q["id"], mid)
            at = temporal.parse_time(by_id[mid]["valid_at"])
            assert start <= at < end, (q["id"], mid)
            assert at <= ref, (q["id"], mid)


def test_the_questions_cover_the_issue_s_expressions_and_timezone_traps(data: tuple[list, list]) -> None:
    _, questions = data
    words = {q["period_words"] for q in questions}
    for needed in (
        "เมื่อวาน", "เมื่อวานซืน", "สัปดาห์ที่แล้ว", "อาทิตย์ที่แล้ว", "สัปดาห์นี้", "เดือนที่แล้ว",
        "เดือนมีนาคม", "ปีที่แล้ว", "3 วันก่อน", "วันจันทร์ที่แล้ว", "วันนี้",
        "yesterday", "the day before yesterday", "last week", "this week", "last month", "in March",
        "last year", "3 days ago", "on Monday", "today",
    ):  # fmt: skip
        assert needed in words, needed
    assert any("มี.ค." in w for w in words) and any("ธ.ค. 68" in w for w in words)
    assert any("พ.ศ. 2569" in w for w in words)
    assert {q["kind"] for q in questions} == set(temporal.KINDS)
    assert len({q["timezone"] for q in questions}) >= 4
    # some questions are asked when the local date differs from the UTC date
    shifted = [
        q for q in questions
        if temporal.parse_time(q["reference_time"]).astimezone(ZoneInfo(q["timezone"])).date()
        != temporal.parse_time(q["reference_time"]).astimezone(ZoneInfo("UTC")).date()
    ]  # fmt: skip
    assert len(shifted) >= 4
    assert any(
        q["reference_time"] == "2026-12-31T20:00:00Z" and q["timezone"] == "Asia/Bangkok" for q in questions
    )


# --- the validator can fail -------------------------------------------------------------------


def _broken(data: tuple[list, list], change: Any) -> list[str]:
    memories, questions = copy.deepcopy(data)
    change(memories, questions)
    return temporal.validate(memories, questions)


def test_an_expected_memory_outside_the_period_is_reported(data: tuple[list, list]) -> None:
    def move_period(memories: list, questions: list) -> None:
        questions[0]["period"] = {"from": "2026-06-01T00:00:00Z", "to": "2026-06-02T00:00:00Z"}

    problems = _broken(data, move_period)
    assert any("outside the period" in p for p in problems)


def test_an_expected_memory_of_another_user_is_reported(data: tuple[list, list]) -> None:
    def other_user(memories: list, questions: list) -> None:
        q = next(q for q in questions if q["user"] == "nok")
        q["expected"] = [next(m["id"] for m in memories if m["user"] == "dan")]

    assert any("is not a memory of 'nok'" in p for p in _broken(data, other_user))


def test_a_period_that_does_not_fit_its_kind_is_reported(data: tuple[list, list]) -> None:
    def week_from_tuesday(memories: list, questions: list) -> None:
        q = next(q for q in questions if q["kind"] == "week")
        start = temporal.parse_time(q["period"]["from"])
        q["period"]["from"] = temporal.utc_text(start + timedelta(days=1))

    assert any("does not fit kind 'week'" in p for p in _broken(data, week_from_tuesday))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda m, q: m[0].update(key="Bad Key"), "key"),
        (lambda m, q: m[0].update(valid_at="2026-03-12 10:00"), "valid_at"),
        (lambda m, q: m[0].update(category="diary"), "category"),
        (lambda m, q: q[0].update(period_words="next week"), "period_words"),
        (lambda m, q: q[0].update(lang="en"), "lang"),
        (lambda m, q: q[0].update(reference_time="2026-03-13 20:00"), "RFC 3339"),
        (lambda m, q: q[0].update(timezone="Mars/Olympus"), "Mars/Olympus"),
        (lambda m, q: q.__delitem__(slice(0, 100)), "fewer than 60"),
        (lambda m, q: m.__delitem__(slice(0, 60)), "fewer than 150"),
    ],
)
def test_broken_copies_of_the_data_are_refused(data: tuple[list, list], change: Any, expected: str) -> None:
    assert any(expected in p for p in _broken(data, change))


# --- asking -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "words", "ignored"),
    [
        ("What did I do last week?", "last week", "What did I do?"),
        (
            "When I met Arthit in February, what did we agree on?",
            "in February",
            "When I met Arthit, what did we agree on?",
        ),
        ("เมื่อวานไปไหนมา", "เมื่อวาน", "ไปไหนมา"),
        ("ตอนเดือนมี.ค. ย้ายบ้านไปอยู่ไหนนะ", "ตอนเดือนมี.ค.", "ย้ายบ้านไปอยู่ไหนนะ"),
        ("1:1 กับ Mark เมื่อวานซืนคุยเรื่องอะไร", "เมื่อวานซืน", "1:1 กับ Mark คุยเรื่องอะไร"),
    ],
)
def test_the_period_ignored_query_drops_only_the_period_words(
    question: str, words: str, ignored: str
) -> None:
    assert temporal.without_period(question, words) == ignored


def test_run_stores_every_memory_then_asks_each_question_both_ways() -> None:
    # Given a stub API that finds the expected memory only when the period is sent
    memories, questions = temporal.load()
    memories = [m for m in memories if m["user"] == "nok"]
    questions = [q for q in questions if q["user"] == "nok"]
    calls: list[tuple[str, str, dict[str, Any]]] = []
    by_question = {q["question"]: q for q in questions}

    def post(url: str, token: str, body: dict[str, Any]) -> dict[str, Any]:
        calls.append((url, token, body))
        if url.endswith("/memory"):
            return {"id": "x"}
        q = by_question.get(body["query"])
        if q is None or "reference_time" not in body:
            return {"memories": [{"key": "gym_20251202"}]}
        return {"memories": [{"key": q["expected"][0].split("-", 1)[1]}]}

    # When the runner runs against it
    report = temporal.run(
        "http://api.test/", lambda user: f"jwt-{user}", memories=memories, questions=questions, post=post
    )

    # Then every memory was stored with its valid_at, by its user's token
    stores = [c for c in calls if c[0] == "http://api.test/memory"]
    assert len(stores) == len(memories)
    assert all(c[1] == "jwt-nok" and "valid_at" in c[2] for c in stores)
    # and each question was asked twice: with reference_time and timezone, then without them or the period words
    recalls = [c[2] for c in calls if c[0].endswith("/memory/recall")]
    assert len(recalls) == 2 * len(questions)
    aware, blind = recalls[0::2], recalls[1::2]
    for q, a, b in zip(questions, aware, blind, strict=True):
        assert a == {
            "query": q["question"],
            "limit": 5,
            "reference_time": q["reference_time"],
            "timezone": q["timezone"],
        }
        assert set(b) == {"query", "limit"} and q["period_words"] not in b["query"]
    assert report["time_aware"]["th"] == 1.0
    assert report["period_ignored"]["th"] < 0.1
    assert report["n"]["th"] == len(questions) and report["n"]["en"] == 0
    assert report["passed"]["th"] is True


def test_summarize_fails_the_target_when_the_margin_is_too_small() -> None:
    qs = [{"id": f"q{i}", "lang": "en", "user": "dan", "expected": ["dan-x"]} for i in range(10)]
    hits = {
        "time_aware": {f"q{i}": True for i in range(10)},
        "period_ignored": {f"q{i}": i < 8 for i in range(10)},
    }
    report = temporal.summarize(qs, hits)
    assert report["time_aware"]["en"] == 1.0 and report["period_ignored"]["en"] == 0.8
    assert report["passed"]["en"] is False
    assert report["misses"]["period_ignored"] == ["q8", "q9"]


def test_the_local_midnight_of_a_date_only_move_is_the_previous_utc_day(data: tuple[list, list]) -> None:
    memories, _ = data
    move = next(m for m in memories if m["id"] == "nok-home_nonthaburi")
    assert move["valid_at"] == "2026-02-28T17:00:00Z"
    local = datetime.fromisoformat(move["valid_at"].replace("Z", "+00:00")).astimezone(
        ZoneInfo("Asia/Bangkok")
    )
    assert (local.month, local.day, local.hour) == (3, 1, 0)


def test_run_refuses_a_server_that_does_not_keep_valid_at() -> None:
    # Given a server whose POST /memory answers every memory undated (valid_at not stored)
    memories, questions = temporal.load()

    def post(url: str, token: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"id": "x", "valid_at": None} if url.endswith("/memory") else {"memories": []}

    # When the runner runs against it, Then it stops at the first memory instead of reporting figures
    with pytest.raises(RuntimeError, match="kept valid_at None"):
        temporal.run("http://api.test", lambda user: user, memories=memories, questions=questions, post=post)
