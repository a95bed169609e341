"""Recall knows time, through the handlers (moto): a period a query names ("last week", "เมื่อวาน",
"in March") puts the relevant memories of that period first, read at `reference_time` in the request's
timezone or the mind's; a query naming none ranks exactly as before; `as_of` shows the memories as they
were then (versions, creation, expiry, deletion) on recall, context, GET /memory/{id} and GET /memory;
the context prompt starts with the current time and dates each memory in the timezone; the MCP tools
take the same fields and show the dates.

Dated memories are written through the store's one write path (`nuggets.save`), with the times a test
needs (created, updated, valid_at, versions); recall sees them as it sees any write.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.lambdas import ALICE
from synapse.ai import dates, embeddings
from synapse.core.models.base import Category, Change, Priority, Source, parse_iso, utcnow
from synapse.core.models.chat import RecalledMemory
from synapse.core.models.memory import Memory
from synapse.search import cache, scoring
from synapse.search.corpus import Corpus
from synapse.store import codec, db, nuggets
from synapse.store.account import minds
from synapse.store.keys import Space, history_sk
from tests.conftest import Call

SPACE = Space("alice")
DIM = 64
MODEL = "test-bag-of-words"


class BagOfWords:
    """A deterministic embedder: each word (Thai: each character pair) a fixed random direction, so that
    texts sharing words are close. Counts its document batches."""

    model = MODEL
    dim = DIM

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    @staticmethod
    def _vector(text: str) -> np.ndarray:
        words = re.findall(r"[a-z0-9]+", text.lower())
        thai = re.sub(r"[^\u0e00-\u0e7f]", "", text)
        words += [thai[i : i + 2] for i in range(len(thai) - 1)]
        out = np.zeros(DIM, dtype=np.float32)
        for w in words or ["<empty>"]:
            seed = int.from_bytes(hashlib.sha256(w.encode()).digest()[:4], "little")
            out += np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
        return out / max(float(np.linalg.norm(out)), 1e-9)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.batches.append(list(texts))
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)


@pytest.fixture
def full_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """No embedder: recall ranks by full text alone (a deployment without a Gemini key)."""
    monkeypatch.setattr(embeddings, "get_embedder", lambda *_a, **_k: None)


@pytest.fixture
def embedder(monkeypatch: pytest.MonkeyPatch) -> BagOfWords:
    fake = BagOfWords()
    monkeypatch.setattr(embeddings, "get_embedder", lambda *_a, **_k: fake)
    return fake


def utc(text: str) -> datetime:
    return parse_iso(text)


def put(
    key: str,
    content: str,
    *,
    valid: str | None = None,
    created: str = "2026-10-01T09:00:00Z",
    updated: str | None = None,
    expires: str | None = None,
    category: Category = Category.context,
    tags: list[str] | None = None,
    space: Space = SPACE,
    vector: bool = True,
) -> Memory:
    """Store a memory (a new one, or a new version of the one with that key) with the given times."""
    mem_id = nuggets.id_for(space, category, key)
    read = nuggets.get(space, mem_id)
    memory = Memory(
        id=mem_id,
        category=category,
        key=key,
        content=content,
        tags=tags or [],
        priority=Priority.normal,
        source=Source.user,
        verified=True,
        confidence=1.0,
        expires_at=utc(expires) if expires else None,
        user_id=space.user_id,
        created_at=read.memory.created_at if read else utc(created),
        updated_at=utc(updated or created),
        version=nuggets.next_version(read),
        mind_id=space.mind_id,
        valid_at=utc(valid) if valid else None,
    )
    vec = codec.make_vector(BagOfWords._vector(content), MODEL) if vector else None
    kind = Change.updated if read else Change.created
    nuggets.save(space, [nuggets.Write(memory=memory, read=read, vector=vec, kind=kind)])
    return memory


def recall(call: Call, who: dict[str, str] = ALICE, **body: Any) -> dict[str, Any]:
    answer = call("memory_recall", "POST", "/memory/recall", body=body, who=who)
    assert answer["statusCode"] == 200, answer["body"]
    out: dict[str, Any] = answer["json"]
    return out


def keys(answer: dict[str, Any]) -> list[str]:
    return [m["key"] for m in answer["memories"]]


# --- a week of an English speaker in Los Angeles, asked on Wednesday 2 December 2026 -----------------

LA = "America/Los_Angeles"
ASKED_LA = "2026-12-02T18:00:00Z"  # Wednesday 10:00 in Los Angeles; last week = Mon 23 - Sun 29 November


def dan(call: Call) -> None:
    put("climb_1126", "Climbing session at the bouldering gym, sent a V4", valid="2026-11-26T17:00:00Z")
    put("dentist_1124", "Dentist: a filling replaced, lower left", valid="2026-11-24T18:30:00Z")
    put("book_club_1127", "Book club at Priya's: we read Piranesi", valid="2026-11-28T03:00:00Z")
    # the same activities in other weeks: what a time-blind ranking finds too
    put("climb_1119", "Climbing session at the bouldering gym, worked on a V5", valid="2026-11-19T17:00:00Z")
    put("climb_1112", "Climbing session at the bouldering gym, easy day", valid="2026-11-12T17:00:00Z")
    put("dentist_0910", "Dentist: cleaning and a check-up", valid="2026-09-10T18:00:00Z")
    put("book_club_1030", "Book club at Sam's: we read Klara and the Sun", valid="2026-10-31T02:00:00Z")
    # the evening of Sunday 29 November in Los Angeles is Monday 30 November in UTC: still last week
    put("movie_1129", "Watched Dune Part Two at home with Maya", valid="2026-11-30T05:00:00Z")
    # and Monday 30 November in Los Angeles is this week
    put("run_1130", "Ran 10 km along the waterfront", valid="2026-11-30T16:00:00Z")


def test_what_did_i_do_last_week_ranks_last_weeks_memories_first(call: Call, embedder: BagOfWords) -> None:
    # Given a week of memories among the same activities at other dates
    dan(call)
    # When Dan asks what he did last week, in his timezone
    found = recall(call, query="What did I do last week?", limit=9, reference_time=ASKED_LA, timezone=LA)
    # Then the four memories of Monday 23 to Sunday 29 November (local days) come first
    week = {"climb_1126", "dentist_1124", "book_club_1127", "movie_1129"}
    assert set(keys(found)[:4]) == week
    assert set(keys(found)[4:]) == {"climb_1119", "climb_1112", "dentist_0910", "book_club_1030", "run_1130"}
    # and each answer says when it was true
    by_key = {m["key"]: m for m in found["memories"]}
    assert by_key["movie_1129"]["valid_at"] == "2026-11-30T05:00:00Z"


def test_a_topic_and_a_period_find_that_periods_memory_of_the_topic(call: Call, embedder: BagOfWords) -> None:
    dan(call)
    # "climbing last week": the climbing of last week first, then last week's other memories' turn is
    # decided by relevance like everything else
    found = recall(
        call, query="How did climbing go last week?", limit=3, reference_time=ASKED_LA, timezone=LA
    )
    assert keys(found)[0] == "climb_1126"
    # the same question without the period: the three climbing sessions tie on the words
    blind = recall(call, query="How did climbing go?", limit=3)
    assert set(keys(blind)) == {"climb_1126", "climb_1119", "climb_1112"}


def test_a_memory_of_the_period_with_no_relevance_does_not_pass_a_relevant_one(
    call: Call, full_text: None
) -> None:
    # Given full-text recall only (no embedder), last week held a climbing session, and the dentist
    # was seen in September
    put("climb_1126", "Climbing session at the bouldering gym", valid="2026-11-26T17:00:00Z")
    put("dentist_0910", "Dentist: cleaning and a check-up", valid="2026-09-10T18:00:00Z")
    # When the question names last week and a topic no memory of that week is about
    found = recall(call, query="Did I see the dentist last week?", reference_time=ASKED_LA, timezone=LA)
    # Then the relevant memory (of another week) comes before last week's irrelevant one
    assert keys(found) == ["dentist_0910", "climb_1126"]
    # and a question with no topic words puts the whole week first, even with nothing to rank by
    week = recall(call, query="What did I do last week?", reference_time=ASKED_LA, timezone=LA)
    assert keys(week) == ["climb_1126", "dentist_0910"]


# --- Thai, in Bangkok, where the local day is not the UTC day ----------------------------------------

BKK = "Asia/Bangkok"


def nok(space: Space = SPACE) -> None:
    # 23:30 on Thursday 3 December in Bangkok (16:30 UTC): "yesterday" when asked on Friday 4 December
    put("dentist", "ไปหาหมอฟันที่คลินิกแถวนิมมาน ถอนฟันคุด", valid="2026-12-03T16:30:00Z", space=space)
    # 00:30 on Friday 4 December in Bangkok, 3 December in UTC: today, not yesterday
    put("gym", "ไปยิมตอนเที่ยงคืนครึ่ง เล่นขา", valid="2026-12-03T17:30:00Z", space=space)
    # Wednesday 2 December both ways
    put("cafe", "ไปคาเฟ่แถวนิมมานกับพี่ต้น", valid="2026-12-02T10:00:00Z", space=space)
    put("market", "ไปตลาดวโรรสซื้อของ", valid="2026-11-20T05:00:00Z", space=space)
    put("move", "ย้ายบ้านไปเชียงใหม่", valid="2026-03-14T03:00:00Z", space=space)
    put("concert", "ไปคอนเสิร์ตที่อิมแพค", valid="2026-03-28T12:00:00Z", space=space)


ASKED_BKK = "2026-12-03T20:00:00Z"  # 03:00 on Friday 4 December in Bangkok


def test_thai_yesterday_is_the_local_day_before(call: Call, full_text: None) -> None:
    nok()
    found = recall(call, query="เมื่อวานทำอะไร", limit=3, reference_time=ASKED_BKK, timezone=BKK)
    assert keys(found)[0] == "dentist"
    # read in UTC instead, "yesterday" is 2 December: the café
    utc_day = recall(call, query="เมื่อวานทำอะไร", limit=3, reference_time=ASKED_BKK, timezone="UTC")
    assert keys(utc_day)[0] == "cafe"


def test_the_minds_timezone_is_used_when_the_request_names_none(call: Call, full_text: None) -> None:
    # Given a mind set to Bangkok time
    record = minds.MindRecord("m_bangkok00001", "Nok", None, utcnow(), timezone=BKK)
    minds.put_mind("alice", record)
    space = Space("alice", record.mind_id)
    nok(space)
    # When the question is asked without a timezone, in that mind
    answer = call(
        "memory_recall",
        "POST",
        "/memory/recall",
        body={"query": "เมื่อวานทำอะไร", "limit": 3, "reference_time": ASKED_BKK},
        who=ALICE,
        headers={"x-mind-id": record.mind_id},
    )
    # Then "yesterday" is the mind's local yesterday
    assert answer["statusCode"] == 200, answer["body"]
    assert keys(answer["json"])[0] == "dentist"


@pytest.mark.parametrize(
    ("query", "expected"),
    [("What did I do in March?", {"move", "concert"}), ("เดือนมีนาคมทำอะไรบ้าง", {"move", "concert"})],
)
def test_in_march_ranks_marchs_memories_first(
    call: Call, full_text: None, query: str, expected: set[str]
) -> None:
    nok()
    # a memory with no valid_at is judged by when it was stored: 10 March
    put("note", "ไปซื้อต้นไม้มาปลูก", created="2026-03-10T04:00:00Z")
    found = recall(call, query=query, limit=3, reference_time=ASKED_BKK, timezone=BKK)
    assert set(keys(found)) == expected | {"note"}


# --- a query naming no period ranks exactly as before ------------------------------------------------


def before(corpus: Corpus, query: str, dense: np.ndarray | None, limit: int) -> list[tuple[str, float]]:
    """POST /memory/recall's ranking before the Time issue (commit d40bdf7): live at now, `best`."""
    now = utcnow().timestamp()
    mask = scoring.live(corpus, now, None, None)
    return [
        (corpus.columns.ids[i], round(s, 4)) for i, s in scoring.best(corpus, query, dense, mask, now, limit)
    ]


def mixed_memories() -> None:
    nok()
    dan_texts = [
        "Climbing session at the bouldering gym",
        "Dentist: a filling replaced",
        "Book club: we read Klara and the Sun",
        "Coffee with Priya in March",
        "I may move to Portland next year",
        "Second interview at Cascade Robotics",
        "Every Monday I call my mother",
    ]
    for n, text in enumerate(dan_texts):
        put(f"en_{n}", text, valid=f"2026-{n + 3:02d}-1{n}T10:00:00Z")


WORDS = [
    "coffee",
    "dentist",
    "climbing",
    "gym",
    "book",
    "club",
    "Portland",
    "Priya",
    "Monday",
    "Mondays",
    "may",
    "March",
    "Sun",
    "sat",
    "second",
    "week",
    "month",
    "year",
    "last",
    "time",
    "every",
    "few",
    "days",
    "ago",
    "night",
    "morning",
    "what",
    "did",
    "I",
    "do",
    "where",
    "go",
    "กาแฟ",
    "หมอฟัน",
    "ยิม",
    "เชียงใหม่",
    "ตลาด",
    "คาเฟ่",
    "สัปดาห์",
    "เดือน",
    "ปี",
    "ทุกวันจันทร์",
    "วัน",
    "ไป",
    "ไหน",
    "ทำ",
    "อะไร",
    "ที่แล้ว",
    "หน้า",
    "นี้",
    "ดาวศุกร์",
    "พระจันทร์",
    "หลายวันก่อน",
]
TABLE = [
    "what do I do every Monday",
    "Coffee with Priya",
    "ทุกวันจันทร์ทำอะไร",
    "ไปหาหมอฟันที่ไหน",
    "ดาวศุกร์",
    "the last time I saw the dentist",
    "a few days ago",
    "May I ask where I moved",
    "Second interview",
    "หลายปีก่อนอยู่ที่ไหน",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
    joiner=st.sampled_from([" ", ""]),
    zone=st.sampled_from([None, BKK, LA]),
    at=st.sampled_from([None, "2026-03-31T23:30:00Z", ASKED_BKK]),
)
def test_a_query_without_a_period_ranks_exactly_as_before(
    call: Call, embedder: BagOfWords, words: list[str], joiner: str, zone: str | None, at: str | None
) -> None:
    """Hypothesis picks queries of Thai and English words, false friends of dates among them ("may",
    "March", "Sun", "second", ทุกวันจันทร์, ดาวศุกร์); each one the parser finds no period in is
    answered exactly as the code before the Time issue answers it: the same memories, the same
    scores, in the same order, whatever reference_time and timezone say."""
    if not nuggets.get(SPACE, nuggets.id_for(SPACE, Category.context, "dentist")):
        mixed_memories()
    for query in [joiner.join(words), *TABLE]:
        reference = utc(at) if at else utcnow()
        if dates.query_period(query, reference, dates.ZoneInfo(zone or "UTC")) is not None:
            continue
        body: dict[str, Any] = {"query": query, "limit": 8}
        if zone:
            body["timezone"] = zone
        if at:
            body["reference_time"] = at
        got = [(m["id"], m["score"]) for m in recall(call, **body)["memories"]]
        corpus = cache.load(SPACE, f"{MODEL}/{DIM}")
        dense = scoring.similarity(corpus, embedder.embed_query(query), candidates=200)
        assert got == before(corpus, query, dense, 8), query


def test_the_table_of_no_period_queries_really_names_no_period() -> None:
    # (so that the property above compares something: every query of the table is one it checks)
    for query in TABLE:
        assert dates.query_period(query, utc(ASKED_BKK), dates.ZoneInfo(BKK)) is None, query


# --- as of a moment -----------------------------------------------------------------------------------


def history_of_a_move(call: Call) -> str:
    """home_city: Bangkok (1 Jan), then Chiang Mai (1 Mar), then verified (1 May); pet created 1 Apr;
    a trip that expired on 1 Feb, then renewed without expiry on 1 Apr."""
    first = put(
        "home_city", "I live in Bangkok, in Ari", created="2026-01-01T00:00:00Z", category=Category.fact
    )
    put(
        "home_city",
        "I moved to Chiang Mai, near Nimman",
        updated="2026-03-01T00:00:00Z",
        category=Category.fact,
    )
    put(
        "home_city",
        "I moved to Chiang Mai, near Nimman",
        updated="2026-05-01T00:00:00Z",
        category=Category.fact,
    )
    put("pet", "A cat called Som-O", created="2026-04-01T00:00:00Z", category=Category.fact)
    put("trip", "Trip to Japan booked", created="2026-01-05T00:00:00Z", expires="2026-02-01T00:00:00Z")
    put("trip", "Trip to Japan booked again", updated="2026-04-02T00:00:00Z")
    return first.id


def test_get_as_of_shows_the_version_of_that_moment(call: Call) -> None:
    mem_id = history_of_a_move(call)

    def get(at: str) -> dict[str, Any]:
        return call(
            "memory_get",
            "GET",
            f"/memory/{mem_id}",
            path_params={"id": mem_id},
            query={"as_of": at},
            who=ALICE,
        )

    february = get("2026-01-20T00:00:00Z")
    assert february["statusCode"] == 200, february["body"]
    assert february["json"]["content"] == "I live in Bangkok, in Ari"
    assert february["json"]["version"] == 1 and february["json"]["updated_at"] == "2026-01-01T00:00:00Z"
    assert get("2026-03-01T00:00:00Z")["json"]["version"] == 2  # (the moment of a write: that version)
    assert get("2026-12-01T00:00:00Z")["json"]["version"] == 3
    # before it was created: not there
    before_it = get("2025-12-31T23:59:59Z")
    assert before_it["statusCode"] == 404 and before_it["json"]["error"]["code"] == "not_found"
    # a bad as_of is a 422 in the envelope
    bad = get("yesterday")
    assert bad["statusCode"] == 422
    assert bad["json"]["error"]["details"][0]["loc"] == ["query", "as_of"]


def test_list_as_of_has_what_existed_and_was_live_then_in_pages(call: Call) -> None:
    history_of_a_move(call)

    def listing(at: str, **query: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        cursor = None
        while True:
            q = {"as_of": at, "limit": "1", **query, **({"cursor": cursor} if cursor else {})}
            page = call("memory_list", "GET", "/memory", query=q, who=ALICE)
            assert page["statusCode"] == 200, page["body"]
            out += [(m["key"], m["content"]) for m in page["json"]["memories"]]
            cursor = page["json"]["next_cursor"]
            if cursor is None:
                return sorted(out)

    # in January: Bangkok, and the trip (live until 1 February); no pet yet
    assert listing("2026-01-20T00:00:00Z") == [
        ("home_city", "I live in Bangkok, in Ari"),
        ("trip", "Trip to Japan booked"),
    ]
    # in March: the trip had expired then, though it is live now
    assert listing("2026-03-15T00:00:00Z") == [("home_city", "I moved to Chiang Mai, near Nimman")]
    # in April: the pet too (a category filter, judged with the rest)
    assert [k for k, _ in listing("2026-04-15T00:00:00Z", category="fact")] == ["home_city", "pet"]


def test_recall_and_context_as_of_read_the_old_texts(call: Call, embedder: BagOfWords) -> None:
    history_of_a_move(call)
    # now: Chiang Mai
    now = recall(call, query="where do I live", limit=3)
    assert "Chiang Mai" in now["memories"][0]["text"]
    # as of February: Bangkok, scored on a vector of the old text (embedded in one batch)
    embedder.batches.clear()
    then = recall(call, query="where do I live Bangkok Ari", limit=3, as_of="2026-01-20T00:00:00Z")
    assert [m["text"] for m in then["memories"]] == ["I live in Bangkok, in Ari", "Trip to Japan booked"]
    assert [sorted(b) for b in embedder.batches] == [["I live in Bangkok, in Ari", "Trip to Japan booked"]]
    # the same in context, and the cached corpus is untouched (a one-off corpus)
    ctx = call(
        "memory_context",
        "POST",
        "/memory/context",
        body={"query": "where do I live", "as_of": "2026-01-20T00:00:00Z", "reference_time": ASKED_BKK},
        who=ALICE,
    )
    assert ctx["statusCode"] == 200, ctx["body"]
    assert "- I live in Bangkok, in Ari" in ctx["json"]["prompt"].splitlines()
    assert "Chiang Mai" in recall(call, query="where do I live", limit=1)["memories"][0]["text"]


def test_a_memory_whose_old_version_is_no_longer_kept_is_left_out(call: Call) -> None:
    mem_id = history_of_a_move(call)
    # the first version falls out of the kept window (here: deleted by hand)
    db.client().delete_item(TableName=db.table(), Key=db.key(SPACE.pk, SPACE.sk(history_sk(mem_id, 1))))
    answer = call(
        "memory_get",
        "GET",
        f"/memory/{mem_id}",
        path_params={"id": mem_id},
        query={"as_of": "2026-01-20T00:00:00Z"},
        who=ALICE,
    )
    assert answer["statusCode"] == 404
    assert keys(recall(call, query="Bangkok", as_of="2026-01-20T00:00:00Z")) == ["trip"]


def test_a_deleted_memory_is_gone_as_of_any_moment(call: Call) -> None:
    mem_id = history_of_a_move(call)
    deleted = call("memory_delete", "DELETE", f"/memory/{mem_id}", path_params={"id": mem_id}, who=ALICE)
    assert deleted["statusCode"] == 204
    at = {"as_of": "2026-01-20T00:00:00Z"}
    assert (
        call("memory_get", "GET", f"/memory/{mem_id}", path_params={"id": mem_id}, query=at, who=ALICE)[
            "statusCode"
        ]
        == 404
    )
    listed = call("memory_list", "GET", "/memory", query=at, who=ALICE)["json"]["memories"]
    assert [m["key"] for m in listed] == ["trip"]
    assert [m["key"] for m in recall(call, query="Bangkok Ari home", **at)["memories"]] == ["trip"]


# --- the prompt ---------------------------------------------------------------------------------------


def test_the_prompt_starts_with_the_current_time_and_dates_memories_in_the_timezone(
    call: Call, embedder: BagOfWords
) -> None:
    # Given a memory of 18:00 UTC on 2 December: 3 December in Bangkok, and one with no date
    put("dentist", "Dentist appointment at the Nimman clinic", valid="2026-12-02T18:00:00Z")
    put("plain", "Likes the dentist near Nimman", vector=True)
    answer = call(
        "memory_context",
        "POST",
        "/memory/context",
        body={"query": "dentist Nimman", "reference_time": ASKED_BKK, "timezone": BKK},
        who=ALICE,
    )
    assert answer["statusCode"] == 200, answer["body"]
    lines = answer["json"]["prompt"].splitlines()
    # Then the first line is the reference time in Bangkok, and the dated memory has its local date
    assert lines[0] == "Current time: 2026-12-04 03:00 (Asia/Bangkok)"
    assert "- (2026-12-03) Dentist appointment at the Nimman clinic" in lines
    assert "- Likes the dentist near Nimman" in lines
    # the same in UTC: the other day
    utc_prompt = call(
        "memory_context",
        "POST",
        "/memory/context",
        body={"query": "dentist Nimman", "reference_time": ASKED_BKK},
        who=ALICE,
    )["json"]["prompt"].splitlines()
    assert utc_prompt[0] == "Current time: 2026-12-03 20:00 (UTC)"
    assert "- (2026-12-02) Dentist appointment at the Nimman clinic" in utc_prompt


def test_recalled_memories_have_valid_at_and_the_result_shape(call: Call, embedder: BagOfWords) -> None:
    put("dentist", "Dentist appointment", valid="2026-12-02T18:00:00Z")
    found = recall(call, query="dentist")["memories"][0]
    assert RecalledMemory.model_validate(found).valid_at == utc("2026-12-02T18:00:00Z")
    assert found["valid_at"] == "2026-12-02T18:00:00Z"


@pytest.mark.parametrize(
    "body",
    [
        {"query": "x", "reference_time": "2026-12-03T10:00:00"},  # no offset
        {"query": "x", "reference_time": 1764756000},
        {"query": "x", "timezone": "Mars/Olympus"},
        {"query": "x", "as_of": "last week"},
    ],
)
def test_bad_time_fields_are_422(call: Call, body: dict[str, Any]) -> None:
    for function, path in (("memory_recall", "/memory/recall"), ("memory_context", "/memory/context")):
        answer = call(function, "POST", path, body=body, who=ALICE)
        assert answer["statusCode"] == 422, (path, answer["body"])


# --- MCP -----------------------------------------------------------------------------------------------


def test_the_mcp_tools_take_the_time_fields_and_show_dates(call: Call, full_text: None) -> None:
    from tests.integration.test_mcp import text, tool

    nok()
    args = {"query": "เมื่อวานทำอะไร", "limit": 2, "reference_time": ASKED_BKK, "timezone": BKK}
    found = tool(call, "recall", args)
    assert not found.get("isError"), found
    first = text(found).splitlines()[0]
    assert first.startswith("- [context/dentist] ไปหาหมอฟันที่คลินิกแถวนิมมาน ถอนฟันคุด (2026-12-03, score")
    ctx = tool(call, "context", args)
    lines = text(ctx).splitlines()
    assert lines[0] == "Current time: 2026-12-04 03:00 (Asia/Bangkok)"
    assert "- (2026-12-03) ไปหาหมอฟันที่คลินิกแถวนิมมาน ถอนฟันคุด" in lines
    assert ctx["structuredContent"]["memories"][0]["key"] == "dentist"
