"""Faults, proven: Gemini timing out / 429 / 5xx, DynamoDB throttling, duplicate deliveries.

Gemini is the local double (harness/gemini.py, GEMINI_ATTEMPTS=3, timeout 1 s); DynamoDB is moto,
with errors injected in front of it by a botocore `before-send` hook on synapse.store's own client, so
the client's standard retry mode sees them exactly as it would see DynamoDB's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import botocore.endpoint
import pytest
from botocore.awsrequest import AWSResponse

from harness.gemini import GeminiDouble
from harness.lambdas import ALICE, LambdaContext, load_function, sample_event
from synapse.core.models.base import utcnow
from synapse.store import conversations as conversations_store
from synapse.store import db
from synapse.store.keys import Space
from tests.conftest import TABLE, Call

MESSAGES = [
    {"role": "user", "content": "My name is Somchai and I live in Chiang Mai"},
    {"role": "user", "content": "We are migrating billing from Docker Swarm to Kubernetes"},
]
NUGGETS = {
    "nuggets": [
        {
            "category": "identity",
            "key": "user_name",
            "content": "Name is Somchai",
            "tags": ["name"],
            "priority": "high",
            "confidence": 0.9,
            "is_identity": True,
        },
        {
            "category": "project",
            "key": "billing_migration",
            "content": "Billing moves from Docker Swarm to Kubernetes",
            "tags": ["k8s"],
            "priority": "normal",
            "confidence": 0.8,
            "is_identity": False,
        },
    ]
}


def ingest(call: Call, session: str = "s1", messages: list[dict[str, str]] = MESSAGES) -> dict[str, Any]:
    return call(
        "memory_ingest",
        "POST",
        "/memory/ingest",
        body={"sessionId": session, "messages": messages},
        who=ALICE,
    )


def items(aws: Any, prefix: str, user_id: str = "alice") -> list[dict[str, Any]]:
    answer = aws.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :p AND begins_with(sk, :n)",
        ExpressionAttributeValues={":p": {"S": f"mem:{user_id}"}, ":n": {"S": prefix}},
    )
    return list(answer["Items"])


def msg_count(aws: Any, session: str = "s1") -> int:
    item = aws.get_item(TableName=TABLE, Key={"pk": {"S": "mem:alice"}, "sk": {"S": f"ses:{session}"}})
    return int(item.get("Item", {}).get("msg_count", {"N": "0"})["N"])


def assert_unavailable(answer: dict[str, Any]) -> None:
    assert answer["statusCode"] == 503, answer.get("body")
    assert answer["json"]["error"]["code"] == "upstream_unavailable"
    assert answer["json"]["error"]["message"]
    assert int(answer["headers"]["retry-after"]) > 0


@pytest.fixture
def extraction(gemini_double: GeminiDouble) -> GeminiDouble:
    gemini_double.generate = lambda body: json.dumps(NUGGETS)
    return gemini_double


# --- Gemini -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault",
    ["timeout", "429", "500", "503"],
)
def test_gemini_down_is_retried_then_503_with_raw_messages_kept(
    fault: str, call: Call, aws: Any, extraction: GeminiDouble
) -> None:
    # Given Gemini fails every attempt the client makes (3)
    if fault == "timeout":
        extraction.hang_next(3, seconds=3.0)  # past GEMINI_TIMEOUT_MS=1000
    else:
        extraction.fail_next(3, int(fault), retry_after=1 if fault == "429" else None)
    # When alice ingests
    answer = ingest(call)
    # Then 503 with Retry-After, after the client retried (3 attempts reached the double)
    assert_unavailable(answer)
    assert len(extraction.calls("generateContent")) == 3
    # and the raw messages are kept, counted once, and no nugget or identity is half-written
    assert [i["content"]["S"] for i in items(aws, "msg:s1:")] == [m["content"] for m in MESSAGES]
    assert msg_count(aws) == len(MESSAGES)
    assert items(aws, "nug:") == [] and items(aws, "identity") == []
    # When the client retries once Gemini is back: the nuggets, and the messages are not stored twice
    again = ingest(call)
    assert again["statusCode"] == 200, again["body"]
    assert again["json"]["nuggets_created"] == 2
    assert msg_count(aws) == len(MESSAGES) and len(items(aws, "msg:s1:")) == len(MESSAGES)


@pytest.mark.parametrize("status", [429, 500, 503])
def test_a_transient_gemini_failure_is_retried_and_the_ingest_succeeds(
    status: int, call: Call, aws: Any, extraction: GeminiDouble
) -> None:
    extraction.fail_next(2, status)  # two failures, the third attempt succeeds
    answer = ingest(call)
    assert answer["statusCode"] == 200, answer["body"]
    assert answer["json"]["nuggets_created"] == 2
    assert len(extraction.calls("generateContent")) == 3
    assert len(items(aws, "nug:")) == 2


def test_embedding_down_after_extraction_writes_no_nugget(
    call: Call, aws: Any, extraction: GeminiDouble
) -> None:
    # Given extraction answers, then every embedding attempt fails
    def generate(body: dict[str, Any]) -> str:
        extraction.fail_next(3, 503)
        return json.dumps(NUGGETS)

    extraction.generate = generate
    # When alice ingests: 503, and no nugget is half-written (extracted but unembedded)
    assert_unavailable(ingest(call))
    assert len(extraction.calls("batchEmbedContents")) == 3
    assert items(aws, "nug:") == [] and items(aws, "identity") == []
    assert msg_count(aws) == len(MESSAGES)


def test_recall_with_gemini_down_is_503(call: Call, gemini_double: GeminiDouble) -> None:
    gemini_double.fail_next(3, 503)
    answer = call("memory_recall", "POST", "/memory/recall", body={"query": "kubernetes"}, who=ALICE)
    assert_unavailable(answer)


# --- DynamoDB -----------------------------------------------------------------------------------


class Throttle:
    """Answers the next `n` DynamoDB calls of `operations` with ProvisionedThroughputExceeded."""

    def __init__(self, operations: tuple[str, ...], n: int) -> None:
        self.operations = operations
        self.remaining = n
        self.injected = 0
        self.passed = 0

    def __call__(self, request: Any, **kwargs: Any) -> AWSResponse | None:
        operation = kwargs["event_name"].rsplit(".", 1)[-1]
        if operation not in self.operations:
            return None
        if self.remaining == 0:
            self.passed += 1
            return None
        self.remaining -= 1
        self.injected += 1
        # every before-send handler runs: send moto (registered after us) nowhere it answers
        request.url = "https://throttled.invalid/"
        body = json.dumps(
            {
                "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                "message": "The level of configured provisioned throughput for the table was exceeded.",
            }
        ).encode()
        headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": "throttled"}
        raw = _Raw(body)
        return AWSResponse(request.url, 400, headers, raw)


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **kwargs: Any) -> Iterator[bytes]:
        yield self.body


@pytest.fixture
def throttle(aws: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """throttle(("Query",), n) → a Throttle hooked in front of moto on synapse.store's client."""
    sleeps: list[float] = []
    monkeypatch.setattr(botocore.endpoint.time, "sleep", lambda s: sleeps.append(s))  # retries, not waits
    hooked: list[Throttle] = []
    events = db.client().meta.events

    def make(operations: tuple[str, ...], n: int) -> Throttle:
        t = Throttle(operations, n)
        t.sleeps = sleeps  # type: ignore[attr-defined]
        events.register_first("before-send.dynamodb", t, unique_id=f"throttle-{len(hooked)}")
        hooked.append(t)
        return t

    yield make
    for i, _ in enumerate(hooked):
        events.unregister("before-send.dynamodb", unique_id=f"throttle-{i}")


def create(call: Call, key: str = "home", content: str = "Lives in Chiang Mai") -> dict[str, Any]:
    return call(
        "memory_create",
        "POST",
        "/memory",
        body={"category": "fact", "key": key, "content": content},
        who=ALICE,
    )


def test_throttled_reads_are_retried_by_the_client(call: Call, throttle: Any) -> None:
    assert create(call)["statusCode"] == 201
    # Given DynamoDB throttles the next 3 queries
    t = throttle(("Query",), 3)
    # When alice lists her memories: Then the client retried, and she gets them
    answer = call("memory_list", "GET", "/memory", who=ALICE)
    assert answer["statusCode"] == 200, answer["body"]
    assert [m["key"] for m in answer["json"]["memories"]] == ["home"]
    assert t.injected == 3 and t.passed >= 1 and len(t.sleeps) >= 3


def test_throttled_writes_are_retried_by_the_client_and_written_once(
    call: Call, aws: Any, throttle: Any
) -> None:
    t = throttle(("PutItem", "UpdateItem", "TransactWriteItems", "BatchWriteItem"), 2)
    answer = create(call)
    assert answer["statusCode"] == 201, answer["body"]
    assert t.injected == 2 and t.passed >= 1
    assert len(items(aws, "nug:")) == 1


def test_throttling_that_persists_is_503_with_retry_after(call: Call, aws: Any, throttle: Any) -> None:
    assert create(call)["statusCode"] == 201
    queries = throttle(("Query",), 1000)
    first = call("memory_list", "GET", "/memory", who=ALICE)
    assert_unavailable(first)
    assert queries.injected >= 5  # a Query is attempted 5 times (standard mode, max_attempts=5)
    t = throttle(("GetItem", "PutItem", "UpdateItem", "TransactWriteItems"), 1000)
    for function, method, path, body in [
        ("memory_list", "GET", "/memory", None),
        ("memory_create", "POST", "/memory", {"category": "fact", "key": "job", "content": "Engineer"}),
        ("memory_ingest", "POST", "/memory/ingest", {"sessionId": "s1", "messages": MESSAGES}),
    ]:
        answer = call(function, method, path, body=body, who=ALICE)
        assert_unavailable(answer)
        assert "Throughput" not in answer["body"] and "Traceback" not in answer["body"]
    # each call gave up only after the client's 5 attempts (standard mode, max_attempts=5)
    assert t.injected >= 10
    t.remaining = queries.remaining = 0
    # and nothing of the refused writes is there: one memory, no session, no message
    kinds = [i["sk"]["S"].split(":")[0] for i in aws.scan(TableName=TABLE)["Items"]]
    assert kinds.count("nug") == 1 and "ses" not in kinds and "msg" not in kinds, kinds


# --- duplicate deliveries -----------------------------------------------------------------------


def test_the_same_ingest_sent_three_times_makes_one_set_of_nuggets(
    call: Call, aws: Any, extraction: GeminiDouble
) -> None:
    answers = [ingest(call) for _ in range(3)]
    assert [a["statusCode"] for a in answers] == [200, 200, 200]
    assert answers[0]["json"]["nuggets_created"] == 2
    assert answers[1]["json"] == answers[0]["json"] == answers[2]["json"]
    assert len(items(aws, "nug:")) == 2
    assert msg_count(aws) == len(MESSAGES) and len(items(aws, "msg:s1:")) == len(MESSAGES)
    assert len(extraction.calls("generateContent")) == 1


def summary_due(count: int, session: str = "s1") -> dict[str, Any]:
    event = sample_event("summarize_session")
    event["detail"] = {"userId": "alice", "sessionId": session, "msgCount": count}
    return event


def test_the_same_summary_due_delivered_three_times_makes_one_chunk(call: Call, aws: Any) -> None:
    # Given 30 messages of a session (boundaries 15 and 30; a chunk covers 15 messages)
    for batch in range(3):
        messages = [
            {"role": "user", "content": f"Release note {batch}-{i}: we ship the parser"} for i in range(10)
        ]
        assert ingest(call, messages=messages)["statusCode"] == 200
    summarizer = load_function("summarize_session")
    # When the event of boundary 15 is delivered three times in a row
    results = [summarizer.handler(summary_due(15), LambdaContext()) for _ in range(3)]
    assert [r["chunk_id"] for r in results] == ["sum:s1:chunk_1", None, None]
    # and the events of boundaries 30 and 15 again, interleaved (moto in-process is not thread-safe:
    # deliveries at the same moment are proven against the local server, tests/e2e/test_faults_e2e.py)
    later = [summarizer.handler(summary_due(n), LambdaContext()) for n in (30, 15, 30, 30)]
    assert [r["chunk_id"] for r in later] == ["sum:s1:chunk_2", None, None, None]
    # Then exactly one chunk per boundary
    chunks = items(aws, "sum:s1:")
    assert [(c["sk"]["S"], int(c["msg_count"]["N"])) for c in chunks] == [
        ("sum:s1:chunk_0001", 15),
        ("sum:s1:chunk_0002", 15),
    ]


def test_an_ingest_that_loses_the_race_for_the_session_count_retries_after_the_winner(
    aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a session with 2 messages, and a second ingest that lands between our read of the count
    # and our transaction (what a parallel Lambda does)
    now = utcnow()
    from synapse.store import conversations, keys

    race = Space("u-race")
    conversations_store.append_messages(
        race, "s", [("user", "one"), ("user", "two")], request_id="h0", now=now, ttl_days=1
    )
    real_get = conversations._get
    raced: list[bool] = []

    def get_then_race(space: Space, sk: str, *args: Any) -> Any:
        found = real_get(space, sk, *args)
        if sk == keys.session_sk("s") and not raced:
            raced.append(True)
            conversations_store.append_messages(
                race, "s", [("user", "rival")], request_id="h1", now=now, ttl_days=1
            )
        return found

    monkeypatch.setattr(conversations, "_get", get_then_race)
    # When ours is written
    span = conversations_store.append_messages(
        race, "s", [("user", "three"), ("user", "four")], request_id="h2", now=now, ttl_days=1
    )
    # Then it took the numbers after the winner's, and nothing was counted twice or overwritten
    assert raced and (span.first, span.last, span.replayed) == (4, 5, False)
    assert conversations_store.session_count(race, "s") == 5
    stored = [(m.seq, m.content) for m in conversations_store.read_messages(race, "s", 1, 10)]
    assert stored == [(1, "one"), (2, "two"), (3, "rival"), (4, "three"), (5, "four")]


def test_a_marker_past_its_ttl_is_not_a_retry(aws: Any) -> None:
    # Given an ingest an hour and more ago whose marker DynamoDB has not yet swept (TTL deletes late)
    from datetime import timedelta

    then = utcnow() - timedelta(hours=5)
    ttl = Space("u-ttl")
    first = conversations_store.append_messages(
        ttl, "s", [("user", "hello there")], request_id="h", now=then, ttl_days=7
    )
    # When the same batch arrives within the hour: a retry; five hours later: a new ingest
    retry = conversations_store.append_messages(
        ttl,
        "s",
        [("user", "hello there")],
        request_id="h",
        now=then + timedelta(minutes=30),
        ttl_days=7,
    )
    later = conversations_store.append_messages(
        ttl, "s", [("user", "hello there")], request_id="h", now=utcnow(), ttl_days=7
    )
    # Then the retry found the first range, the later one was stored and counted
    assert (first.first, first.replayed) == (1, False)
    assert (retry.first, retry.replayed) == (1, True)
    assert (later.first, later.last, later.replayed) == (2, 2, False)
    assert conversations_store.session_count(ttl, "s") == 2
