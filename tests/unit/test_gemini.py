"""Gemini through the real google-genai client, pointed at the local HTTP double (127.0.0.1 only)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from harness.gemini import GeminiDouble, fake_vector, running_double
from synapse.ai.embeddings import DOCUMENT_PREFIX, QUERY_PREFIX, GeminiEmbedder, get_embedder
from synapse.ai.facts import RuleExtractor
from synapse.ai.llm import (
    ExistingKey,
    ExtractedNugget,
    GeminiExtractor,
    GeminiSummarizer,
    Message,
    get_extractor,
    get_summarizer,
)
from synapse.ai.summaries import ExtractiveSummarizer
from synapse.core import state
from synapse.core.errors import UpstreamUnavailable
from synapse.core.models.base import Category, Priority, Role


@pytest.fixture
def gemini_double(monkeypatch: pytest.MonkeyPatch) -> Iterator[GeminiDouble]:
    with running_double(monkeypatch) as double:
        yield double


def user(text: str) -> Message:
    return Message(role=Role.user, content=text)


def assistant(text: str) -> Message:
    return Message(role=Role.assistant, content=text)


def canned(nuggets: list[dict[str, Any]]) -> Any:
    return lambda body: json.dumps({"nuggets": nuggets}, ensure_ascii=False)


# --- embeddings ----------------------------------------------------------------------------------------


def test_documents_are_embedded_in_one_batched_call_of_768_normalised_vectors(
    gemini_double: GeminiDouble,
) -> None:
    # Given a Gemini key and ten texts, Thai among them
    texts = [f"memory number {i}" for i in range(9)] + ["ผมชื่อสมชาย อยู่เชียงใหม่"]
    embedder = get_embedder()
    assert isinstance(embedder, GeminiEmbedder)

    # When they are embedded as documents
    vectors = embedder.embed_documents(texts)

    # Then one HTTP call carried them all, for gemini-embedding-2 at 768 dimensions
    assert len(gemini_double.requests) == 1
    call = gemini_double.requests[0]
    assert call.path.endswith("/models/gemini-embedding-2:batchEmbedContents")
    assert len(call.body["requests"]) == 10
    assert {r["outputDimensionality"] for r in call.body["requests"]} == {768}
    assert {r["model"] for r in call.body["requests"]} == {"models/gemini-embedding-2"}
    # and the key went in a header, never in the URL
    assert call.headers["x-goog-api-key"] == "test-fake-gemini-key"
    assert "key=" not in call.query
    # and the answer is (10, 768) float32, unit length, in the order given
    assert vectors.shape == (10, 768)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    expected = np.asarray(fake_vector(DOCUMENT_PREFIX + texts[9], 768), dtype=np.float32)
    np.testing.assert_allclose(vectors[9], expected / np.linalg.norm(expected), rtol=1e-4, atol=1e-6)


def test_documents_and_queries_are_marked_with_the_models_prompt_prefixes(
    gemini_double: GeminiDouble,
) -> None:
    # Given the Gemini embedder
    embedder = get_embedder()
    assert embedder is not None

    # When a document and a query are embedded
    embedder.embed_documents(["I like dark theme"])
    query = embedder.embed_query("what theme do I like?")

    # Then gemini-embedding-2's documented prefixes are used, and no task_type is sent
    doc_call, query_call = gemini_double.calls("batchEmbedContents")
    assert doc_call.embedded_texts() == ["title: none | text: I like dark theme"]
    assert query_call.embedded_texts() == ["task: search result | query: what theme do I like?"]
    assert QUERY_PREFIX == "task: search result | query: "
    for call in (doc_call, query_call):
        assert all("taskType" not in r for r in call.body["requests"])
    # and the query vector is one unit vector of 768 values
    assert query.shape == (768,)
    assert query.dtype == np.float32
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-5


def test_an_older_model_gets_task_types_instead_of_prefixes(gemini_double: GeminiDouble) -> None:
    # Given an embedder for gemini-embedding-001
    embedder = GeminiEmbedder("test-fake-gemini-key", model="gemini-embedding-001", dim=256)

    # When a document and a query are embedded
    embedder.embed_documents(["a"])
    embedder.embed_query("b")

    # Then the task types mark them, and the texts are sent as they are
    doc_call, query_call = gemini_double.calls("batchEmbedContents")
    assert doc_call.body["requests"][0]["taskType"] == "RETRIEVAL_DOCUMENT"
    assert query_call.body["requests"][0]["taskType"] == "RETRIEVAL_QUERY"
    assert doc_call.embedded_texts() == ["a"]
    assert doc_call.body["requests"][0]["outputDimensionality"] == 256


def test_no_documents_make_no_call(gemini_double: GeminiDouble) -> None:
    # Given the Gemini embedder, When nothing is embedded
    vectors = GeminiEmbedder("test-fake-gemini-key").embed_documents([])

    # Then no request is made and the answer is an empty (0, 768) matrix
    assert gemini_double.requests == []
    assert vectors.shape == (0, 768)


def test_vectors_longer_than_asked_are_truncated_then_normalised() -> None:
    # Given a client whose answers are 3072 long whatever was asked (an injected stand-in)
    class Emb:
        def __init__(self, values: list[float]) -> None:
            self.values = values

    class Resp:
        def __init__(self, n: int) -> None:
            self.embeddings = [Emb(fake_vector(str(i), 3072)) for i in range(n)]

    class Models:
        def embed_content(self, *, model: str, contents: list[Any], config: Any) -> Resp:
            return Resp(len(contents))

    class Client:
        models = Models()

    embedder = GeminiEmbedder(client=Client(), dim=768)  # type: ignore[arg-type]

    # When two documents are embedded
    vectors = embedder.embed_documents(["x", "y"])

    # Then each is the first 768 values, re-normalised (Matryoshka truncation)
    head = np.asarray(fake_vector("0", 3072)[:768], dtype=np.float32)
    np.testing.assert_allclose(vectors[0], head / np.linalg.norm(head), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_a_rate_limit_then_success_is_retried(gemini_double: GeminiDouble) -> None:
    # Given Gemini answers 429 once
    gemini_double.fail_next(1, 429)

    # When a query is embedded
    vector = get_embedder().embed_query("hello")  # type: ignore[union-attr]

    # Then the client retried and succeeded
    assert len(gemini_double.requests) == 2
    assert vector.shape == (768,)


def test_persistent_503_becomes_upstream_unavailable_with_retry_after(gemini_double: GeminiDouble) -> None:
    # Given Gemini stays at 503 (with a Retry-After of 7 s)
    gemini_double.fail_next(10, 503, retry_after=7)

    # When documents are embedded
    with pytest.raises(UpstreamUnavailable) as caught:
        get_embedder().embed_documents(["a", "b"])  # type: ignore[union-attr]

    # Then every attempt was made (GEMINI_ATTEMPTS=3) and the error says when to come back
    assert len(gemini_double.requests) == 3
    assert caught.value.retry_after == 7
    assert caught.value.status == 503
    assert caught.value.message == "The embedding service is unavailable; try again shortly."
    assert caught.value.__cause__ is not None
    assert "test-fake-gemini-key" not in str(caught.value)


@pytest.mark.parametrize("status", [400, 401, 403])
def test_a_refused_key_or_request_says_so_and_is_not_retried(
    gemini_double: GeminiDouble, status: int
) -> None:
    # Given Gemini refuses (a wrong stored key answers 400 "API key not valid", or 401/403)
    gemini_double.fail_next(10, status)
    # When documents are embedded
    with pytest.raises(UpstreamUnavailable) as caught:
        get_embedder().embed_documents(["a"])  # type: ignore[union-attr]
    # Then one request was made, and the answer says what to do instead of "try again shortly"
    assert len(gemini_double.requests) == 1
    assert caught.value.retry_after == 60 and "PUT /providers/gemini" in caught.value.message


def test_a_hanging_upstream_times_out_into_upstream_unavailable(
    gemini_double: GeminiDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given Gemini never answers within the 300 ms timeout, and two attempts are allowed
    monkeypatch.setenv("GEMINI_TIMEOUT_MS", "300")
    monkeypatch.setenv("GEMINI_ATTEMPTS", "2")

    state.reset()
    gemini_double.hang_next(5, seconds=3)

    # When a query is embedded
    started = time.monotonic()
    with pytest.raises(UpstreamUnavailable) as caught:
        get_embedder().embed_query("hello")  # type: ignore[union-attr]

    # Then it gave up after both attempts timed out, well before the upstream would have answered
    assert len(gemini_double.requests) == 2
    assert time.monotonic() - started < 2.5
    assert caught.value.retry_after >= 1


def test_the_client_is_created_once_per_key_and_google_genai_loads_lazily(
    gemini_double: GeminiDouble,
) -> None:
    # Given the embedder factory
    # When it is asked twice for the same key, and once for a user's own key
    first, second = get_embedder(), get_embedder()
    own = get_embedder("users-own-key")

    # Then the same embedder (and client) serves the same key, another one the other key
    assert first is second
    assert own is not first
    assert first.client is second.client  # type: ignore[union-attr]
    assert "users-own-key" not in repr(own)


def test_without_a_key_the_factories_fall_back_to_offline_implementations() -> None:
    # Given no Gemini key (the conftest removes it) and LOCAL_EMBEDDER=none
    # When the factories are asked
    # Then the rules, the extractive summarizer and no embedder are returned
    assert isinstance(get_extractor(), RuleExtractor)
    assert isinstance(get_summarizer(), ExtractiveSummarizer)
    assert get_embedder() is None


def test_importing_the_modules_does_not_import_google_genai() -> None:
    # Given a fresh interpreter, When synapse.ai.embeddings and synapse.ai.llm are imported
    import subprocess

    code = "import sys, synapse.ai.embeddings, synapse.ai.llm; print('google.genai' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": "layers/common/python", "PATH": ""},
    )
    # Then google.genai has not been loaded (it is only loaded to call Gemini)
    assert out.stdout.strip() == "False"


# --- extraction ----------------------------------------------------------------------------------------


def test_extraction_sends_a_response_schema_and_parses_thai_nuggets(gemini_double: GeminiDouble) -> None:
    # Given Gemini answers with two nuggets, one in Thai, and the user already has a name nugget
    gemini_double.generate = canned(
        [
            {
                "category": "identity",
                "key": "user_name",
                "content": "ชื่อ สมชาย",
                "tags": ["name"],
                "priority": "high",
                "confidence": 0.95,
                "is_identity": True,
            },
            {
                "category": "preference",
                "key": "theme",
                "content": "ชอบ Dark theme",
                "tags": ["preference", "theme"],
                "priority": "normal",
                "confidence": 0.9,
                "is_identity": True,
            },
        ]
    )
    existing = [ExistingKey(category=Category.identity, key="user_name", content="ชื่อ สมศักดิ์")]

    # When a conversation is extracted
    nuggets = get_extractor().extract(
        [user("ผมชื่อสมชายครับ ชอบ Dark theme"), assistant("ยินดีที่ได้รู้จักครับ"), user("ขอบคุณครับ")], existing
    )

    # Then one generateContent call asked for JSON constrained by the schema
    (call,) = gemini_double.calls("generateContent")
    assert call.model == "gemini-3.1-flash-lite"
    config = call.body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    schema = config["responseSchema"]
    assert schema["type"].upper() == "OBJECT"
    item = schema["properties"]["nuggets"]["items"]
    assert set(item["properties"]) >= {
        "category",
        "key",
        "content",
        "tags",
        "priority",
        "confidence",
        "is_identity",
    }
    assert set(item["properties"]["category"]["enum"]) == {c.value for c in Category}
    # and the prompt showed the existing keys and the conversation, without the transient thanks
    system = " ".join(p["text"] for p in call.body["systemInstruction"]["parts"])
    assert "identity/user_name: ชื่อ สมศักดิ์" in system
    assert "reuse that exact category" in system
    prompt = " ".join(p["text"] for c in call.body["contents"] for p in c["parts"])
    assert "ผมชื่อสมชายครับ" in prompt
    assert "ขอบคุณครับ" not in prompt
    # and the nuggets came back validated, Thai kept Thai
    assert nuggets == [
        ExtractedNugget(
            category=Category.identity,
            key="user_name",
            content="ชื่อ สมชาย",
            tags=["name"],
            priority=Priority.high,
            confidence=0.95,
            is_identity=True,
        ),
        ExtractedNugget(
            category=Category.preference,
            key="theme",
            content="ชอบ Dark theme",
            tags=["preference", "theme"],
            priority=Priority.normal,
            confidence=0.9,
            is_identity=True,
        ),
    ]


def test_invalid_nuggets_are_dropped_not_the_batch(gemini_double: GeminiDouble) -> None:
    # Given Gemini answers one good nugget, one with a bad category, one with an empty content,
    # and one whose key only needs lower-casing
    good = {"category": "fact", "key": "has_cat", "content": "Has a cat named Mochi", "tags": ["pet"],
            "priority": "normal", "confidence": 0.8, "is_identity": False}  # fmt: skip
    gemini_double.generate = canned(
        [
            good,
            {**good, "category": "hobby", "key": "x"},
            {**good, "key": "empty", "content": "  "},
            {**good, "key": "Favourite Food", "content": "Likes pad thai", "confidence": 3},
        ]
    )

    # When extracted
    nuggets = GeminiExtractor("test-fake-gemini-key").extract([user("I have a cat named Mochi")], [])

    # Then the valid (and the repairable) nuggets are kept
    assert [(n.key, n.confidence) for n in nuggets] == [("has_cat", 0.8), ("favourite_food", 1.0)]


def test_unusable_json_falls_back_to_the_rules(gemini_double: GeminiDouble) -> None:
    # Given Gemini answers text that is not JSON
    gemini_double.generate = lambda body: "Sorry, I cannot do that."

    # When extracted
    nuggets = GeminiExtractor("test-fake-gemini-key").extract([user("My name is Ann")], [])

    # Then the rule extractor's nuggets are returned instead
    assert [(n.key, n.content) for n in nuggets] == [("user_name", "Name: Ann")]


def test_only_transient_messages_make_no_call(gemini_double: GeminiDouble) -> None:
    # Given a conversation of thanks only, When extracted
    nuggets = get_extractor().extract([user("ขอบคุณครับ"), user("👍"), assistant("ยินดีครับ")], [])

    # Then nothing is asked of Gemini and nothing is returned
    assert nuggets == []
    assert gemini_double.requests == []


def test_extraction_rate_limited_then_ok_and_down_for_good(gemini_double: GeminiDouble) -> None:
    # Given one 429, then success
    gemini_double.fail_next(1, 429)
    assert get_extractor().extract([user("I live in Lyon")], []) == []
    assert len(gemini_double.calls("generateContent")) == 2

    # Given Gemini down for good
    gemini_double.fail_next(10, 500)
    with pytest.raises(UpstreamUnavailable) as caught:
        get_extractor().extract([user("I live in Lyon")], [])
    assert caught.value.message == "The language model service is unavailable; try again shortly."
    assert caught.value.retry_after == 5


# --- summaries ----------------------------------------------------------------------------------------


def test_summary_is_one_plain_text_call_with_the_previous_summary(gemini_double: GeminiDouble) -> None:
    # Given Gemini answers a Thai summary
    gemini_double.generate = lambda body: "  ผู้ใช้ชื่อสมชาย กำลังวางแผนเที่ยวญี่ปุ่น  "

    # When a Thai conversation is summarised with the previous chunk's summary
    summary = get_summarizer().summarize(
        [user("ผมจะไปเที่ยวญี่ปุ่นเดือนหน้า"), assistant("เยี่ยมเลยครับ")], previous="ผู้ใช้ชื่อสมชาย"
    )

    # Then one plain-text generateContent call was made, and its text is the summary
    (call,) = gemini_double.calls("generateContent")
    assert "responseSchema" not in call.body.get("generationConfig", {})
    system = " ".join(p["text"] for p in call.body["systemInstruction"]["parts"])
    assert "ผู้ใช้ชื่อสมชาย" in system
    assert "Thai stays Thai" in system
    assert summary == "ผู้ใช้ชื่อสมชาย กำลังวางแผนเที่ยวญี่ปุ่น"
    assert isinstance(get_summarizer(), GeminiSummarizer)


def test_summary_down_for_good_is_upstream_unavailable(gemini_double: GeminiDouble) -> None:
    # Given Gemini answers 503 every time, When a summary is asked for, Then UpstreamUnavailable
    gemini_double.fail_next(10, 503)
    with pytest.raises(UpstreamUnavailable):
        get_summarizer().summarize([user("We decided to ship on Friday")])


# --- time ---------------------------------------------------------------------------------------------


def said(role: Role, text: str, at: str) -> Message:
    return Message(role=role, content=text, created_at=datetime.fromisoformat(at))


def dated_nugget(**extra: Any) -> dict[str, Any]:
    return {
        "category": "context",
        "key": "dentist",
        "content": "ไปหาหมอฟัน (2 ม.ค. 2569)",
        "tags": ["health"],
        "priority": "normal",
        "confidence": 0.8,
        "is_identity": False,
        **extra,
    }


def test_the_extraction_prompt_shows_each_messages_time_in_the_timezone(gemini_double: GeminiDouble) -> None:
    # Given messages said in 2025, the last at 20:00 UTC on 31 December (1 January 2026 in Bangkok)
    gemini_double.generate = canned([dated_nugget(valid_at="2026-01-02", message=2)])
    messages = [
        said(Role.user, "ผมย้ายมากรุงเทพเมื่อเดือนที่แล้ว", "2025-11-30T09:15:00Z"),
        said(Role.user, "พรุ่งนี้ต้องไปหาหมอฟัน", "2025-12-31T20:00:00Z"),
    ]

    # When extracted in Asia/Bangkok
    nuggets = get_extractor().extract(messages, [], timezone="Asia/Bangkok")

    # Then the prompt gave each message its local time and weekday, across the month and year boundary
    (call,) = gemini_double.calls("generateContent")
    prompt = " ".join(p["text"] for c in call.body["contents"] for p in c["parts"])
    assert "[1] 2025-11-30 16:15 (Sunday) user: ผมย้ายมากรุงเทพเมื่อเดือนที่แล้ว" in prompt
    assert "[2] 2026-01-01 03:00 (Thursday) user: พรุ่งนี้ต้องไปหาหมอฟัน" in prompt
    # and the instructions named the timezone and asked for absolute dates and valid_at, inventing none
    system = " ".join(p["text"] for p in call.body["systemInstruction"]["parts"])
    assert "timezone is Asia/Bangkok" in system
    assert "write the absolute date in `content`" in system and "Buddhist Era" in system
    assert "`valid_at`" in system and "Never invent a date or a time" in system
    # and the response schema asks for valid_at and the message it comes from
    item = call.body["generationConfig"]["responseSchema"]["properties"]["nuggets"]["items"]
    assert {"valid_at", "message"} <= set(item["properties"])
    # and the answer's day is 00:00 of that day in Bangkok, in UTC
    (nugget,) = nuggets
    assert (nugget.content, nugget.valid_at) == (
        "ไปหาหมอฟัน (2 ม.ค. 2569)",
        datetime(2026, 1, 1, 17, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    ("answer", "valid_at"),
    [
        ({"valid_at": "2026-01-02"}, "2026-01-01T17:00:00+00:00"),  # a day: 00:00 in the timezone
        ({"valid_at": "2026-01-02T09:30"}, "2026-01-02T02:30:00+00:00"),  # no offset: in the timezone
        ({"valid_at": "2026-01-02T09:30:00Z"}, "2026-01-02T09:30:00+00:00"),
        ({"valid_at": "2026-01-02T09:30:00+09:00"}, "2026-01-02T00:30:00+00:00"),
        # unusable: the time of the message it names, else of the latest message
        ({"valid_at": "next Friday", "message": 1}, "2025-11-30T09:15:00+00:00"),
        ({"valid_at": "0001-01-01", "message": 2}, "2025-12-31T20:00:00+00:00"),
        ({"valid_at": "2026-02-30"}, "2025-12-31T20:00:00+00:00"),
        ({"valid_at": 20260102, "message": 7}, "2025-12-31T20:00:00+00:00"),
        ({"valid_at": None, "message": True}, "2025-12-31T20:00:00+00:00"),
        ({}, "2025-12-31T20:00:00+00:00"),
    ],
)
def test_valid_at_is_parsed_or_falls_back_to_the_message_time(
    gemini_double: GeminiDouble, answer: dict[str, Any], valid_at: str
) -> None:
    # Given Gemini answers a nugget with this valid_at (and message)
    gemini_double.generate = canned([dated_nugget(**answer)])
    messages = [
        said(Role.user, "ผมย้ายมากรุงเทพเมื่อเดือนที่แล้ว", "2025-11-30T09:15:00Z"),
        said(Role.user, "พรุ่งนี้ต้องไปหาหมอฟัน", "2025-12-31T20:00:00Z"),
    ]
    # When extracted in Asia/Bangkok
    (nugget,) = get_extractor().extract(messages, [], timezone="Asia/Bangkok")
    # Then the nugget is kept, valid at the moment it names, else at its message's time
    assert nugget.valid_at == datetime.fromisoformat(valid_at)


def test_messages_without_a_time_make_the_old_prompt(gemini_double: GeminiDouble) -> None:
    # Given messages that carry no time (a library caller's), When extracted
    gemini_double.generate = canned([dated_nugget(valid_at="2026-01-02")])
    (nugget,) = get_extractor().extract([user("พรุ่งนี้ต้องไปหาหมอฟัน")], [], timezone="Asia/Bangkok")
    # Then the prompt says nothing about time, and no valid_at is guessed
    (call,) = gemini_double.calls("generateContent")
    system = " ".join(p["text"] for p in call.body["systemInstruction"]["parts"])
    prompt = " ".join(p["text"] for c in call.body["contents"] for p in c["parts"])
    assert "timezone" not in system and "[1] user: พรุ่งนี้ต้องไปหาหมอฟัน" in prompt
    assert nugget.valid_at is None


def test_the_rules_fallback_reads_the_same_times(gemini_double: GeminiDouble) -> None:
    # Given Gemini answers no JSON, When a timed Thai message is extracted in Bangkok
    gemini_double.generate = lambda body: "Sorry."
    (nugget,) = get_extractor().extract(
        [said(Role.user, "พรุ่งนี้ต้องไปหาหมอฟัน", "2025-12-31T20:00:00Z")], [], timezone="Asia/Bangkok"
    )
    # Then the rules resolve "tomorrow" in Bangkok
    assert (nugget.content, nugget.valid_at) == (
        "ต้องไปหาหมอฟัน (2 ม.ค. 2569)",
        datetime(2026, 1, 1, 17, tzinfo=UTC),
    )


def test_the_summary_prompt_shows_the_times_and_asks_for_dates(gemini_double: GeminiDouble) -> None:
    # Given Gemini answers a summary
    gemini_double.generate = lambda body: "ผู้ใช้จะไปหาหมอฟันวันที่ 2 ม.ค. 2569"
    # When two messages said across the year boundary are summarised in Bangkok
    summary = get_summarizer().summarize(
        [
            said(Role.user, "พรุ่งนี้ต้องไปหาหมอฟัน", "2025-12-31T20:00:00Z"),
            said(Role.assistant, "รับทราบครับ", "2025-12-31T20:01:00Z"),
        ],
        timezone="Asia/Bangkok",
    )
    # Then the prompt carried each message's local time and asked for absolute dates
    (call,) = gemini_double.calls("generateContent")
    system = " ".join(p["text"] for p in call.body["systemInstruction"]["parts"])
    prompt = " ".join(p["text"] for c in call.body["contents"] for p in c["parts"])
    assert "[1] 2026-01-01 03:00 (Thursday) user: พรุ่งนี้ต้องไปหาหมอฟัน" in prompt
    assert "(Asia/Bangkok)" in system and "write dates absolutely" in system
    assert summary == "ผู้ใช้จะไปหาหมอฟันวันที่ 2 ม.ค. 2569"
