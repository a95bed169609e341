"""The Python SDK (clients/python, `synapse_memory`) without a server: httpx.MockTransport answers.

Retries (429/503 with Retry-After, backoff, what is resent after a network failure), the
Idempotency-Key of an ingest kept across its retries, error mapping, tokens never shown, minds as
headers, request bodies, the sync and async clients' parity, and the package as built (a wheel).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import subprocess
import sys
import traceback
import uuid
import zipfile
from datetime import UTC, date, datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

import synapse_memory
from synapse_memory import (
    UNSET,
    AsyncSynapse,
    Conflict,
    Forbidden,
    InternalError,
    InvalidJSON,
    Message,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    RetryPolicy,
    Synapse,
    SynapseConnectionError,
    SynapseError,
    SynapseResponseError,
    SynapseTimeout,
    Unauthorized,
    UpstreamUnavailable,
    ValidationError,
)

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "clients" / "python"
URL = "http://synapse.test"
TOKEN = "gts_live_TOPSECRETtokenTOPSECRETtokenTOPSECRET42"
NOW = "2026-12-02T10:00:00Z"
MEMORY = {
    "id": "6f1c0c2e-8f1e-5b7a-9c1d-0a7e4f2b9c11",
    "category": "fact",
    "key": "home_city",
    "content": "Lives in Chiang Mai",
    "tags": ["home"],
    "priority": "normal",
    "source": "user",
    "verified": True,
    "confidence": 1.0,
    "expires_at": None,
    "user_id": "alice",
    "session_id": None,
    "created_at": NOW,
    "updated_at": NOW,
    "version": 1,
    "mind_id": "default",
}
INGESTED = {
    "nuggets_created": 1,
    "nuggets_updated": 0,
    "skipped_transient": 0,
    "identity_updated": True,
    "nuggets": [MEMORY],
    "overwrote_user": [],
}


def envelope(status: int, code: str, message: str = "Nope.", **headers: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message}}, headers=headers)


class Script:
    """A MockTransport handler answering a list of responses in order (the last one repeats) and
    recording every request; an exception in the list is raised instead of answering."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers[min(len(self.requests), len(self.answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def body(self, n: int = -1) -> Any:
        return json.loads(self.requests[n].content)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits between attempts, recorded instead of slept."""
    waited: list[float] = []
    monkeypatch.setattr("synapse_memory._sync.time.sleep", waited.append)

    async def fake_sleep(seconds: float) -> None:
        waited.append(seconds)

    monkeypatch.setattr("synapse_memory._async.asyncio.sleep", fake_sleep)
    return waited


def client(script: Script, **kw: Any) -> Synapse:
    return Synapse(URL, token=TOKEN, transport=httpx.MockTransport(script), **kw)


def async_client(script: Script, **kw: Any) -> AsyncSynapse:
    return AsyncSynapse(URL, token=TOKEN, transport=httpx.MockTransport(script), **kw)


# --- retries ---------------------------------------------------------------------------------------


def test_an_ingest_is_retried_on_429_and_503_honouring_retry_after_with_one_idempotency_key(
    sleeps: list[float],
) -> None:
    script = Script(
        envelope(429, "rate_limited", **{"Retry-After": "2"}),
        envelope(503, "upstream_unavailable", **{"Retry-After": "1"}),
        httpx.Response(200, json=INGESTED),
    )
    with client(script) as mem:
        out = mem.ingest("s1", [{"role": "user", "content": "I moved to Berlin"}])
    assert out.nuggets_created == 1 and out.nuggets[0].key == "home_city"
    assert len(script.requests) == 3
    assert sleeps == [2.0, 1.0]
    keys = {r.headers["idempotency-key"] for r in script.requests}
    assert len(keys) == 1
    assert uuid.UUID(keys.pop()).version == 4
    assert all(r.content == script.requests[0].content for r in script.requests)


def test_each_ingest_call_gets_its_own_key_unless_the_caller_names_one(sleeps: list[float]) -> None:
    script = Script(httpx.Response(200, json=INGESTED))
    with client(script) as mem:
        mem.ingest("s1", [{"role": "user", "content": "hi there"}])
        mem.ingest("s1", [{"role": "user", "content": "hi there"}])
        mem.ingest("s1", [{"role": "user", "content": "hi there"}], idempotency_key="chat-msg-42")
    first, second, named = (r.headers["idempotency-key"] for r in script.requests)
    assert first != second and named == "chat-msg-42"


def test_retries_stop_after_max_retries_and_the_error_carries_retry_after(sleeps: list[float]) -> None:
    script = Script(envelope(503, "upstream_unavailable", "Gemini is down.", **{"Retry-After": "3"}))
    with client(script, max_retries=1) as mem, pytest.raises(UpstreamUnavailable) as caught:
        mem.get("abc")
    assert len(script.requests) == 2 and sleeps == [3.0]
    assert (caught.value.status, caught.value.code, caught.value.retry_after) == (
        503,
        "upstream_unavailable",
        3,
    )
    assert caught.value.message == "Gemini is down."


def test_the_default_is_two_retries_and_zero_means_none(sleeps: list[float]) -> None:
    script = Script(envelope(429, "rate_limited", **{"Retry-After": "0"}))
    with client(script) as mem, pytest.raises(RateLimited):
        mem.list()
    assert len(script.requests) == 3
    script = Script(envelope(429, "rate_limited"))
    with client(script, max_retries=0) as mem, pytest.raises(RateLimited):
        mem.list()
    assert len(script.requests) == 1


def test_a_retry_after_longer_than_the_cap_is_not_waited_for(sleeps: list[float]) -> None:
    script = Script(
        envelope(503, "upstream_unavailable", **{"Retry-After": "60"}), httpx.Response(200, json=MEMORY)
    )
    with client(script) as mem, pytest.raises(UpstreamUnavailable) as caught:
        mem.get("abc")
    assert len(script.requests) == 1 and sleeps == [] and caught.value.retry_after == 60
    # a higher cap waits for it
    script = Script(
        envelope(503, "upstream_unavailable", **{"Retry-After": "60"}), httpx.Response(200, json=MEMORY)
    )
    with client(script, retry=RetryPolicy(max_retry_after=120)) as mem:
        assert mem.get("abc").key == "home_city"
    assert sleeps == [60.0]


def test_retry_after_as_an_http_date_and_backoff_without_one(sleeps: list[float]) -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=5), usegmt=True)
    script = Script(
        envelope(429, "rate_limited", **{"Retry-After": when}),
        envelope(429, "rate_limited"),
        httpx.Response(200, json=MEMORY),
    )
    with client(script, retry=RetryPolicy(max_retries=2, backoff=0.5)) as mem:
        mem.get("abc")
    assert 3.0 <= sleeps[0] <= 5.0
    # no Retry-After: the second wait is backoff * 2 with jitter (half to all of it)
    assert 0.5 <= sleeps[1] <= 1.0


def test_other_errors_are_not_retried(sleeps: list[float]) -> None:
    for status, code in [
        (500, "internal_error"),
        (404, "not_found"),
        (409, "conflict"),
        (422, "validation_error"),
    ]:
        script = Script(envelope(status, code))
        with client(script) as mem, pytest.raises(SynapseError):
            mem.store("fact", "k", "v")
        assert len(script.requests) == 1, status


def test_a_409_of_an_ingest_in_progress_is_retried_with_the_same_key(sleeps: list[float]) -> None:
    script = Script(
        envelope(409, "conflict", "The same ingest is being processed."), httpx.Response(200, json=INGESTED)
    )
    with client(script) as mem:
        mem.ingest("s1", [Message(role="user", content="hello world")])
    assert len(script.requests) == 2
    assert script.requests[0].headers["idempotency-key"] == script.requests[1].headers["idempotency-key"]


def test_network_failures_are_retried_only_where_a_repeat_is_harmless(sleeps: list[float]) -> None:
    def broken() -> httpx.ReadError:
        return httpx.ReadError("connection reset by peer")

    # a store (POST) whose connection broke after sending: not sent again
    script = Script(broken(), httpx.Response(201, json=MEMORY))
    with client(script) as mem, pytest.raises(SynapseConnectionError) as caught:
        mem.store("fact", "home_city", "Lives in Chiang Mai")
    assert len(script.requests) == 1
    assert caught.value.status is None and caught.value.code == "connection_error"
    assert "ReadError" in str(caught.value) and URL in str(caught.value)
    # a GET, a PUT, a DELETE and an ingest (Idempotency-Key) are
    cases: list[tuple[Any, httpx.Response]] = [
        (lambda m: m.get("abc"), httpx.Response(200, json=MEMORY)),
        (lambda m: m.update("abc", content="x"), httpx.Response(200, json=MEMORY)),
        (lambda m: m.delete("abc"), httpx.Response(204)),
        (
            lambda m: m.ingest("s1", [{"role": "user", "content": "hello"}]),
            httpx.Response(200, json=INGESTED),
        ),
    ]
    for call, answer in cases:
        script = Script(broken(), answer)
        with client(script) as mem:
            call(mem)
        assert len(script.requests) == 2
        assert script.requests[0].headers.get("idempotency-key") == script.requests[1].headers.get(
            "idempotency-key"
        )
    # a connection that was never made is safe to retry for any request
    script = Script(httpx.ConnectError("connection refused"), httpx.Response(201, json=MEMORY))
    with client(script) as mem:
        assert mem.store("fact", "home_city", "Lives in Chiang Mai").id == MEMORY["id"]
    assert len(script.requests) == 2


def test_a_timeout_is_a_synapse_timeout_and_still_a_connection_error(sleeps: list[float]) -> None:
    script = Script(httpx.ReadTimeout("timed out"))
    with client(script, max_retries=0) as mem, pytest.raises(SynapseTimeout) as caught:
        mem.store("fact", "k", "v")
    assert isinstance(caught.value, SynapseConnectionError) and caught.value.code == "timeout"


def test_the_async_client_retries_the_same_way(sleeps: list[float]) -> None:
    script = Script(
        envelope(503, "upstream_unavailable", **{"Retry-After": "1"}),
        envelope(429, "rate_limited", **{"Retry-After": "0"}),
        httpx.Response(200, json=INGESTED),
    )

    async def main() -> int:
        async with async_client(script) as mem:
            out = await mem.ingest("s1", [{"role": "user", "content": "ผมชื่อสมชาย"}])
            return out.nuggets_created

    assert asyncio.run(main()) == 1
    assert len(script.requests) == 3 and sleeps == [1.0, 0.0]
    assert len({r.headers["idempotency-key"] for r in script.requests}) == 1


# --- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (400, "invalid_json", InvalidJSON),
        (401, "unauthorized", Unauthorized),
        (403, "forbidden", Forbidden),
        (404, "not_found", NotFound),
        (409, "conflict", Conflict),
        (413, "payload_too_large", PayloadTooLarge),
        (422, "validation_error", ValidationError),
        (429, "rate_limited", RateLimited),
        (500, "internal_error", InternalError),
        (503, "upstream_unavailable", UpstreamUnavailable),
    ],
)
def test_each_error_code_is_its_own_exception(status: int, code: str, cls: type[SynapseError]) -> None:
    details = [{"loc": ["body", "key"], "msg": "String should match pattern"}]
    answer = httpx.Response(
        status, json={"error": {"code": code, "message": "One sentence.", "details": details}}
    )
    with client(Script(answer), max_retries=0) as mem, pytest.raises(cls) as caught:
        mem.get("some-id")
    err = caught.value
    assert type(err) is cls and isinstance(err, SynapseError)
    assert (err.status, err.code, err.message, err.details) == (status, code, "One sentence.", details)
    assert (err.method, err.path) == ("GET", "/memory/some-id")
    assert str(err) == f"{status} {code}: One sentence. (GET /memory/some-id)"


def test_answers_without_the_envelope_still_raise_by_status() -> None:
    cases = [
        # API Gateway's own refusal
        (httpx.Response(401, json={"message": "Unauthorized"}), Unauthorized, "unauthorized"),
        # a proxy's page: a status with no class of its own
        (httpx.Response(502, text="<html><body>Bad Gateway</body></html>"), SynapseError, "http_502"),
        (httpx.Response(404, text=""), NotFound, "not_found"),
        # an envelope with a code the contract does not list (the local server's http.server answers):
        # the class of its status, the code as sent
        (
            httpx.Response(400, json={"error": {"code": "bad_request", "message": "Bad request."}}),
            InvalidJSON,
            "bad_request",
        ),
        (
            httpx.Response(414, json={"error": {"code": "uri_too_long", "message": "Too long."}}),
            SynapseError,
            "uri_too_long",
        ),
    ]
    for answer, cls, code in cases:
        with client(Script(answer), max_retries=0) as mem, pytest.raises(cls) as caught:
            mem.list()
        assert type(caught.value) is cls
        assert caught.value.code == code and caught.value.status == answer.status_code
    assert "Bad Gateway" in str(caught_message(httpx.Response(502, text="<html>Bad Gateway</html>")))


def caught_message(answer: httpx.Response) -> SynapseError:
    with client(Script(answer), max_retries=0) as mem:
        try:
            mem.list()
        except SynapseError as exc:
            return exc
    raise AssertionError("no error")


def test_a_success_with_a_body_off_the_contract_is_a_response_error() -> None:
    for answer in (httpx.Response(200, text="not json"), httpx.Response(200, json={"id": 1})):
        with client(Script(answer)) as mem, pytest.raises(SynapseResponseError) as caught:
            mem.get("abc")
        assert caught.value.status == 200 and caught.value.code == "invalid_response"


def test_the_token_never_shows_in_errors_or_reprs(sleeps: list[float]) -> None:
    failures: list[BaseException] = []
    for answer in (
        envelope(401, "unauthorized", "The token is not valid."),
        httpx.Response(500, text="oops"),
        httpx.ConnectError("connection refused"),
        httpx.ReadTimeout("timed out"),
        httpx.Response(200, text="not json"),
    ):
        with client(Script(answer), max_retries=0) as mem:
            try:
                mem.get("abc")
            except SynapseError as exc:
                failures.append(exc)
    assert len(failures) == 5
    for exc in failures:
        shown = [
            str(exc),
            repr(exc),
            "".join(traceback.format_exception(exc)),
            repr(exc.args),
            repr(vars(exc)),
        ]
        assert not any(TOKEN in s or "TOPSECRET" in s for s in shown), shown
    mem = client(Script(httpx.Response(200, json={"status": "ok"})))
    assert TOKEN not in repr(mem) and TOKEN not in str(mem) and TOKEN not in repr(mem.with_mind("m_abc"))
    created = synapse_memory.ApiKeyCreated.model_validate(
        {"key_id": "k1", "key": TOKEN, "name": "bot", "scopes": ["memory:read"], "created_at": NOW}
    )
    assert TOKEN not in repr(created) and TOKEN not in str(created) and created.key == TOKEN


# --- requests --------------------------------------------------------------------------------------


def test_the_token_and_the_mind_go_in_headers_per_client_per_call_and_with_mind() -> None:
    script = Script(httpx.Response(200, json={"memories": [], "next_cursor": None}))
    with client(script, mind_id="m_aaaaaaaaaaaa") as mem:
        mem.list()
        mem.list(mind_id="m_bbbbbbbbbbbb")
        other = mem.with_mind("m_cccccccccccc")
        other.list()
        other.close()  # a view: the pool stays open for `mem`
        mem.list()
    assert [r.headers.get("x-mind-id") for r in script.requests] == [
        "m_aaaaaaaaaaaa",
        "m_bbbbbbbbbbbb",
        "m_cccccccccccc",
        "m_aaaaaaaaaaaa",
    ]
    assert {r.headers["authorization"] for r in script.requests} == {f"Bearer {TOKEN}"}
    script = Script(httpx.Response(200, json={"memories": [], "next_cursor": None}))
    with client(script) as mem:
        mem.list()
    assert "x-mind-id" not in script.requests[0].headers


def test_account_routes_send_no_mind_header_and_create_key_names_its_mind_in_the_body() -> None:
    created = {
        "key_id": "k1",
        "key": TOKEN,
        "name": "bot",
        "scopes": ["memory:read"],
        "created_at": NOW,
        "mind_id": "m_aaaaaaaaaaaa",
    }
    script = Script(httpx.Response(201, json=created))
    with client(script, mind_id="m_aaaaaaaaaaaa") as mem:
        out = mem.create_key("bot", ["memory:read"], mind_id="m_aaaaaaaaaaaa")
    assert out.mind_id == "m_aaaaaaaaaaaa"
    assert "x-mind-id" not in script.requests[0].headers
    assert script.body() == {"name": "bot", "scopes": ["memory:read"], "mind_id": "m_aaaaaaaaaaaa"}


def test_bodies_and_queries_follow_the_contract() -> None:
    script = Script(httpx.Response(201, json=MEMORY))
    with client(script) as mem:
        mem.store(
            "fact",
            "home_city",
            "Lives in เชียงใหม่",
            tags=["home"],
            priority="high",
            confidence=0.5,
            expires_at=datetime(2027, 1, 2, 3, 4, 5, tzinfo=UTC),
        )
        mem.update("id/with slash", content="new", expires_at=None)
        mem.update("abc", tags=["a"], confidence=UNSET)
    assert script.body(0) == {
        "category": "fact",
        "key": "home_city",
        "content": "Lives in เชียงใหม่",
        "tags": ["home"],
        "priority": "high",
        "confidence": 0.5,
        "expires_at": "2027-01-02T03:04:05Z",
    }
    assert "เชียงใหม่".encode() in script.requests[0].content  # UTF-8, not \u escapes
    assert script.requests[1].url.raw_path == b"/memory/id%2Fwith%20slash"
    assert script.body(1) == {"content": "new", "expires_at": None}
    assert script.body(2) == {"tags": ["a"]}

    script = Script(httpx.Response(200, json={"memories": [], "next_cursor": None}))
    with client(script) as mem:
        mem.list(category="fact", tag="home", verified=False, limit=10, cursor="c1")
        mem.expiring(timedelta(hours=24))
        mem.search("ข้าวมันไก่", tag="food", limit=5)
    assert dict(script.requests[0].url.params) == {
        "category": "fact",
        "tag": "home",
        "verified": "false",
        "limit": "10",
        "cursor": "c1",
    }
    assert dict(script.requests[1].url.params) == {"within": "1440m"}
    assert dict(script.requests[2].url.params) == {"q": "ข้าวมันไก่", "tag": "food", "limit": "5"}


def test_valid_at_update_mind_and_the_timeline_follow_the_contract() -> None:
    # Given a client whose server answers a memory dated in Bangkok, a mind, and a timeline page
    from datetime import date

    dated = {**MEMORY, "valid_at": "2026-12-02T17:00:00Z"}
    mind = {
        "mind_id": "default",
        "name": "alice",
        "description": None,
        "created_at": NOW,
        "timezone": "Asia/Bangkok",
        "review_agent_changes": False,
    }
    page = {"memories": [dated], "next_cursor": "c2"}
    script = Script(
        httpx.Response(201, json=dated),
        httpx.Response(200, json=dated),
        httpx.Response(200, json=mind),
        httpx.Response(200, json=page),
        httpx.Response(200, json=page),
    )
    with client(script, mind_id="m_aaaaaaaaaaaa") as mem:
        # When a memory is stored with a date, updated with a moment, the mind patched, the timeline read
        stored = mem.store("note", "dentist", "ไปหาหมอฟัน", valid_at=date(2026, 12, 3))
        mem.update("abc", valid_at=datetime(2026, 12, 3, 9, 30, tzinfo=UTC))
        patched = mem.update_mind(
            "default", timezone="Asia/Bangkok", review_agent_changes=False, description=None
        )
        got = mem.timeline(
            start=date(2026, 12, 1), end=datetime(2027, 1, 1, tzinfo=UTC), limit=10, cursor="c1"
        )
        mem.timeline()
    # Then the bodies and queries are the contract's, and the answers are typed
    assert script.body(0)["valid_at"] == "2026-12-03"
    assert stored.valid_at == datetime(2026, 12, 2, 17, 0, tzinfo=UTC)
    assert script.body(1) == {"valid_at": "2026-12-03T09:30:00Z"}
    assert (script.requests[2].method, script.requests[2].url.path) == ("PATCH", "/minds/default")
    assert "x-mind-id" not in script.requests[2].headers  # account routes name no mind
    assert script.body(2) == {"description": None, "timezone": "Asia/Bangkok", "review_agent_changes": False}
    assert (patched.timezone, patched.review_agent_changes) == ("Asia/Bangkok", False)
    assert script.requests[3].url.path == "/memory/timeline"
    assert dict(script.requests[3].url.params) == {
        "from": "2026-12-01",
        "to": "2027-01-01T00:00:00Z",
        "limit": "10",
        "cursor": "c1",
    }
    assert script.requests[3].headers["x-mind-id"] == "m_aaaaaaaaaaaa"
    assert dict(script.requests[4].url.params) == {}
    assert got.next_cursor == "c2" and got.memories[0].valid_at == stored.valid_at


def test_messages_may_be_dicts_or_models_and_nothing_else() -> None:
    script = Script(httpx.Response(200, json=INGESTED))
    with client(script) as mem:
        mem.ingest("s1", [Message(role="user", content="a"), {"role": "assistant", "content": "b", "id": 7}])
        assert script.body()["messages"] == [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
        ]
        with pytest.raises(TypeError):
            mem.ingest("s1", ["just text"])  # type: ignore[list-item]
        with pytest.raises(ValueError, match="role"):
            mem.ingest("s1", [{"content": "no role"}])


def test_time_goes_where_the_contract_puts_it() -> None:
    bangkok = timezone(timedelta(hours=7))
    recalled = {"memories": [], "identity": None}
    script = Script(httpx.Response(200, json=MEMORY))
    with client(script) as mem:
        # Given a memory dated by its day, another by its moment, and a date cleared
        mem.store("context", "dentist", "ไปหาหมอฟัน", valid_at=date(2026, 12, 3))
        mem.store("context", "trip", "Flew to Tokyo", valid_at=datetime(2026, 11, 20, 8, 0, tzinfo=bangkok))
        mem.update("abc", valid_at=None)
        mem.update("abc", valid_at="2026-03-01")
        # When the mind is read as of a moment
        mem.get("abc", as_of=datetime(2026, 12, 1, tzinfo=UTC))
    # Then a day stays a day (the server reads it in the mind's timezone), a moment is sent in UTC
    assert script.body(0)["valid_at"] == "2026-12-03"
    assert script.body(1)["valid_at"] == "2026-11-20T01:00:00Z"
    assert script.body(2) == {"valid_at": None} and script.body(3) == {"valid_at": "2026-03-01"}
    assert dict(script.requests[4].url.params) == {"as_of": "2026-12-01T00:00:00Z"}

    script = Script(httpx.Response(200, json={"memories": [], "next_cursor": None}))
    with client(script) as mem:
        mem.list(category="fact", as_of="2026-12-01T00:00:00Z")
        list(mem.iter_memories(as_of="2026-12-01T00:00:00Z"))
    assert dict(script.requests[0].url.params) == {"category": "fact", "as_of": "2026-12-01T00:00:00Z"}
    assert script.requests[1].url.params["as_of"] == "2026-12-01T00:00:00Z"

    script = Script(httpx.Response(200, json=recalled))
    asked = datetime(2026, 12, 4, 3, 0, tzinfo=bangkok)
    with client(script) as mem:
        mem.recall("เมื่อวานทำอะไร", reference_time=asked, timezone="Asia/Bangkok")
        mem.recall("where do I live", as_of="2026-06-01T00:00:00Z")
        mem.recall("no time at all")
    assert script.body(0) == {
        "query": "เมื่อวานทำอะไร",
        "reference_time": "2026-12-03T20:00:00Z",
        "timezone": "Asia/Bangkok",
    }
    assert script.body(1) == {"query": "where do I live", "as_of": "2026-06-01T00:00:00Z"}
    assert script.body(2) == {"query": "no time at all"}

    script = Script(httpx.Response(200, json={"prompt": "Current time: …", "memories": []}))
    with client(script) as mem:
        mem.context("last week?", "s1", timezone="America/Los_Angeles", as_of="2026-06-01T00:00:00Z")
    assert script.body() == {
        "query": "last week?",
        "sessionId": "s1",
        "timezone": "America/Los_Angeles",
        "as_of": "2026-06-01T00:00:00Z",
    }


def test_messages_carry_their_time_and_ingest_and_summarize_a_timezone() -> None:
    said = datetime(2025, 12, 31, 23, 30, tzinfo=timezone(timedelta(hours=7)))
    script = Script(httpx.Response(200, json=INGESTED))
    with client(script) as mem:
        mem.ingest(
            "s1",
            [
                Message(role="user", content="เมื่อวานไปหาหมอฟัน", created_at=said),
                {"role": "assistant", "content": "ok", "created_at": "2025-12-31T16:31:00Z"},
                {"role": "user", "content": "no time"},
            ],
            timezone="Asia/Bangkok",
        )
        assert script.body() == {
            "sessionId": "s1",
            "messages": [
                {"role": "user", "content": "เมื่อวานไปหาหมอฟัน", "created_at": "2025-12-31T16:30:00Z"},
                {"role": "assistant", "content": "ok", "created_at": "2025-12-31T16:31:00Z"},
                {"role": "user", "content": "no time"},
            ],
            "timezone": "Asia/Bangkok",
        }
        with pytest.raises(TypeError, match="created_at"):
            mem.ingest("s1", [{"role": "user", "content": "a", "created_at": 1767200000}])
    script = Script(httpx.Response(200, json={"summary": "…", "chunk_id": "c1"}))
    with client(script) as mem:
        mem.summarize("s1", [Message(role="user", content="a", created_at=said)], timezone="Asia/Bangkok")
        mem.summarize("s1")
    assert script.body(0)["timezone"] == "Asia/Bangkok"
    assert script.body(0)["messages"][0]["created_at"] == "2025-12-31T16:30:00Z"
    assert script.body(1) == {"sessionId": "s1"}


def test_answers_carry_when_memories_were_true() -> None:
    dated = {**MEMORY, "valid_at": "2026-12-03T17:00:00Z"}
    recalled = {
        "memories": [
            {
                "id": "a",
                "text": "ไปหาหมอฟัน",
                "type": "context",
                "key": "dentist",
                "score": 0.9,
                "priority": "normal",
                "verified": True,
                "created_at": NOW,
                "valid_at": "2026-12-03T17:00:00Z",
            },
        ],
        "identity": None,
    }
    chunk = {
        "chunk_id": "c1",
        "summary": "…",
        "msg_count": 2,
        "created_at": NOW,
        "first_message_at": "2025-12-31T16:30:00Z",
        "last_message_at": "2025-12-31T16:31:00Z",
    }
    script = Script(
        httpx.Response(200, json=dated),
        httpx.Response(200, json=recalled),
        httpx.Response(200, json={"summaries": [chunk]}),
        httpx.Response(200, json=MEMORY),
    )
    with client(script) as mem:
        got = mem.get("abc")
        found = mem.recall("เมื่อวาน")
        (summary,) = mem.summaries("s1")
        undated = mem.get("abc")
    assert got.valid_at == datetime(2026, 12, 3, 17, 0, tzinfo=UTC)
    assert found.memories[0].valid_at == datetime(2026, 12, 3, 17, 0, tzinfo=UTC)
    assert summary.first_message_at == datetime(2025, 12, 31, 16, 30, tzinfo=UTC)
    assert summary.last_message_at == datetime(2025, 12, 31, 16, 31, tzinfo=UTC)
    assert undated.valid_at is None  # a server before the Time release answers no valid_at


def test_iter_memories_walks_every_page() -> None:
    pages = [
        httpx.Response(200, json={"memories": [MEMORY, MEMORY], "next_cursor": "c1"}),
        httpx.Response(200, json={"memories": [MEMORY], "next_cursor": None}),
    ]
    script = Script(*pages)
    with client(script) as mem:
        assert len(list(mem.iter_memories(page_size=2))) == 3
    assert [r.url.params.get("cursor") for r in script.requests] == [None, "c1"]


def test_identity_defaults_to_the_jwts_subject_and_needs_a_user_id_with_an_api_key() -> None:
    import base64

    payload = (
        base64.urlsafe_b64encode(json.dumps({"sub": "alice@example.com"}).encode()).rstrip(b"=").decode()
    )
    jwt = f"eyJhbGciOiJIUzI1NiJ9.{payload}.signature"
    script = Script(httpx.Response(200, json={"userId": "alice@example.com", "identity": "ชื่อ สมชาย"}))
    with Synapse(URL, token=jwt, transport=httpx.MockTransport(script)) as mem:
        out = mem.identity()
    assert script.requests[0].url.raw_path == b"/memory/identity/alice%40example.com"
    assert out.user_id == "alice@example.com" and out.identity == "ชื่อ สมชาย"
    with client(script) as mem, pytest.raises(ValueError, match="user_id"):
        mem.identity()


def test_answers_keep_fields_a_newer_server_adds() -> None:
    script = Script(httpx.Response(200, json={**MEMORY, "embedding_model": "x", "category": "brand_new"}))
    with client(script) as mem:
        got = mem.get("abc")
    assert got.category == "brand_new" and got.model_extra == {"embedding_model": "x"}
    assert got.created_at == datetime(2026, 12, 2, 10, 0, tzinfo=UTC)


def test_a_base_url_with_a_stage_path_keeps_it() -> None:
    script = Script(httpx.Response(200, json={"status": "ok"}))
    with Synapse("https://api.example.com/prod/", transport=httpx.MockTransport(script)) as mem:
        assert mem.health().status == "ok"
    assert str(script.requests[0].url) == "https://api.example.com/prod/health"
    assert "authorization" not in script.requests[0].headers
    with pytest.raises(ValueError):
        Synapse("localhost:3000")


def test_the_sync_and_async_clients_have_the_same_methods_and_parameters() -> None:
    def public(cls: type) -> dict[str, inspect.Signature]:
        return {
            n: inspect.signature(f) for n, f in vars(cls).items() if callable(f) and not n.startswith("_")
        }

    sync, aio = public(Synapse), public(AsyncSynapse)
    assert set(sync) - {"close"} == set(aio) - {"aclose"}
    for name, sig in sync.items():
        if name == "close":
            continue
        assert list(sig.parameters) == list(aio[name].parameters), name
        assert [p.default for p in sig.parameters.values()] == [
            p.default for p in aio[name].parameters.values()
        ], name
        if name not in ("with_mind", "iter_memories", "iter_export"):
            assert inspect.iscoroutinefunction(getattr(AsyncSynapse, name)), name
    routes = {
        "store",
        "get",
        "list",
        "update",
        "delete",
        "verify",
        "history",
        "restore",
        "by_tag",
        "search",
        "expiring",
        "recall",
        "recall_text",
        "ingest",
        "summarize",
        "context",
        "summaries",
        "identity",
        "create_mind",
        "minds",
        "delete_mind",
        "create_key",
        "keys",
        "revoke_key",
        "set_provider",
        "providers",
        "delete_provider",
        "export",
        "create_export",
        "get_export",
        "wait_export",
        "download_export",
        "iter_export",
        "delete_me",
        "health",
    }
    assert routes <= set(sync)


# --- the package as installed and as built ----------------------------------------------------------


def test_the_installed_package_is_the_source_in_the_tree() -> None:
    """`make venv` installs clients/python (non-editable): a stale install would test old code."""
    installed = Path(synapse_memory.__file__).parent
    source = SDK / "src" / "synapse_memory"
    stale = [
        p.name
        for p in source.glob("*.py")
        if not (installed / p.name).exists() or (installed / p.name).read_bytes() != p.read_bytes()
    ]
    assert not stale, f"the installed synapse_memory differs from {source} in {stale}: run `make venv`"
    assert (installed / "py.typed").exists()


@pytest.mark.slow
def test_the_package_builds_into_a_wheel_that_imports_with_only_httpx_and_pydantic(tmp_path: Path) -> None:
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(tmp_path),
            str(SDK),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = tmp_path.glob("synapse_memory-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = zf.read(metadata).decode()
    assert {"synapse_memory/__init__.py", "synapse_memory/py.typed", "synapse_memory/_core.py"} <= names
    assert "Name: synapse-memory" in meta
    requires = sorted(
        line.split(":", 1)[1].split()[0].split(">")[0].split("<")[0].split("=")[0].strip()
        for line in meta.splitlines()
        if line.startswith("Requires-Dist:")
    )
    assert requires == ["httpx", "pydantic"], requires
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import synapse_memory as s; "
        "assert s.__file__.startswith(sys.argv[1]), s.__file__; "
        "print(s.__version__, s.Synapse('http://127.0.0.1:1').base_url)"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe, str(wheel)], capture_output=True, text=True, timeout=60, check=False
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.split() == [synapse_memory.__version__, "http://127.0.0.1:1"]


# --- review (third release) ------------------------------------------------------------------------

PROPOSAL = {
    "proposal_id": "0192a3b4c5d6e7f80a1b",
    "memory_id": MEMORY["id"],
    "kind": "update",
    "base_version": 1,
    "proposed": {"content": "Lives in Bangkok", "tags": [], "priority": "normal", "confidence": 0.7},
    "source": "agent",
    "key_id": "k1",
    "session_id": None,
    "created_at": NOW,
    "category": "fact",
    "key": "home_city",
}


def test_an_agents_write_of_a_verified_memory_answers_the_proposal() -> None:
    from synapse_memory import Proposal

    script = Script(httpx.Response(202, json={"proposal": PROPOSAL}))
    with client(script) as mem:
        stored = mem.store("fact", "home_city", "Lives in Bangkok")
        updated = mem.update(MEMORY["id"], content="Lives in Bangkok")
        restored = mem.restore(MEMORY["id"], 1)
        deleted = mem.delete(MEMORY["id"])
    for answer in (stored, updated, restored, deleted):
        assert isinstance(answer, Proposal) and answer.proposal_id == PROPOSAL["proposal_id"]
    # and the plain answers stay what they were
    script = Script(httpx.Response(200, json=MEMORY), httpx.Response(204))
    with client(script) as mem:
        assert mem.store("fact", "home_city", "x").id == MEMORY["id"]  # type: ignore[union-attr]
        assert mem.delete(MEMORY["id"]) is None


def test_proposals_accept_decline_and_consolidate_send_the_contracts_requests() -> None:
    script = Script(
        httpx.Response(200, json={"proposals": [PROPOSAL], "next_cursor": None}),
        httpx.Response(200, json={**MEMORY, "content": "Lives in Bangkok", "version": 2}),
        httpx.Response(204),
        httpx.Response(204),
        httpx.Response(200, json={"consolidated": 3, "merged": 1, "created": ["x"]}),
    )
    with client(script, mind_id="m_aaaaaaaaaaaa") as mem:
        page = mem.proposals(limit=10)
        accepted = mem.accept(page.proposals[0].proposal_id, content="Lives in Bangkok", tags=["home"])
        gone = mem.accept("0192a3b4c5d6e7f80a1c")
        mem.decline("0192a3b4c5d6e7f80a1d")
        done = mem.consolidate("m_aaaaaaaaaaaa")
    assert accepted is not None and accepted.version == 2 and gone is None
    assert (done.consolidated, done.merged) == (3, 1)
    sent = [(r.method, r.url.path, r.headers.get("x-mind-id")) for r in script.requests]
    assert sent == [
        ("GET", "/memory/proposals", "m_aaaaaaaaaaaa"),
        ("POST", f"/memory/proposals/{PROPOSAL['proposal_id']}/accept", "m_aaaaaaaaaaaa"),
        ("POST", "/memory/proposals/0192a3b4c5d6e7f80a1c/accept", "m_aaaaaaaaaaaa"),
        ("POST", "/memory/proposals/0192a3b4c5d6e7f80a1d/decline", "m_aaaaaaaaaaaa"),
        ("POST", "/minds/m_aaaaaaaaaaaa/consolidate", None),
    ]
    assert script.body(1) == {"content": "Lives in Bangkok", "tags": ["home"]}
    assert script.requests[2].content == b""  # no edits: no body


def test_mind_settings_and_superseded_listing() -> None:
    mind = {"mind_id": "default", "name": "alice", "description": None, "created_at": NOW}
    script = Script(
        httpx.Response(200, json={**mind, "timezone": "Asia/Bangkok", "review_agent_changes": False}),
        httpx.Response(200, json={"memories": [{**MEMORY, "superseded_by": "x"}], "next_cursor": None}),
    )
    with client(script) as mem:
        updated = mem.update_mind("default", timezone="Asia/Bangkok", review_agent_changes=False)
        page = mem.list(include_superseded=True)
    assert (updated.timezone, updated.review_agent_changes) == ("Asia/Bangkok", False)
    assert page.memories[0].superseded_by == "x"
    assert script.body(0) == {"timezone": "Asia/Bangkok", "review_agent_changes": False}
    assert (script.requests[0].method, script.requests[0].url.path) == ("PATCH", "/minds/default")
    assert script.requests[1].url.params["include"] == "superseded"
