"""Ingest, recall, identity and summaries against moto — offline rules, and Gemini through its double."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from harness.gemini import GeminiDouble
from harness.lambdas import ALICE, LambdaContext, agent, load_function, sample_event, user
from tests.conftest import TABLE, Call

THAI_AND_ENGLISH = [
    {"role": "user", "content": "สวัสดีครับ ผมชื่อสมชาย อยู่เชียงใหม่"},
    {"role": "assistant", "content": "ยินดีที่ได้รู้จักครับคุณสมชาย"},
    {"role": "user", "content": "I prefer dark theme in every editor"},
    {"role": "user", "content": "ขอบคุณ"},
    {"role": "user", "content": "555"},
    {"role": "user", "content": "thanks"},
    {
        "role": "user",
        "content": "We are migrating the billing service from Docker Swarm to Kubernetes next month",
    },
]


def ingest(
    call: Call, messages: list[dict[str, str]], session: str = "s1", who: dict[str, str] = ALICE
) -> dict[str, Any]:
    return call(
        "memory_ingest", "POST", "/memory/ingest", body={"sessionId": session, "messages": messages}, who=who
    )


def recall(call: Call, query: str, who: dict[str, str] = ALICE, **extra: Any) -> dict[str, Any]:
    return call("memory_recall", "POST", "/memory/recall", body={"query": query, **extra}, who=who)


def get_alices_identity(call: Call) -> dict[str, Any]:
    """GET /memory/identity/alice as alice: the whole answer."""
    return call(
        "memory_identity",
        "GET",
        "/memory/identity/alice",
        route="/memory/identity/{userId}",
        path_params={"userId": "alice"},
        who=ALICE,
    )


def alices_identity(call: Call) -> Any:
    return get_alices_identity(call)["json"]["identity"]


def summaries_of(call: Call, session: str) -> list[dict[str, Any]]:
    """GET /memory/summaries/{session} as alice."""
    answer = call(
        "memory_summaries",
        "GET",
        f"/memory/summaries/{session}",
        route="/memory/summaries/{sessionId}",
        path_params={"sessionId": session},
        who=ALICE,
    )
    summaries: list[dict[str, Any]] = answer["json"]["summaries"]
    return summaries


def nugget_count(aws: Any, user_id: str = "alice") -> int:
    answer = aws.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :p AND begins_with(sk, :n)",
        ExpressionAttributeValues={":p": {"S": f"mem:{user_id}"}, ":n": {"S": "nug:"}},
    )
    return int(answer["Count"])


def session_item(aws: Any, session: str = "s1", user_id: str = "alice") -> dict[str, Any]:
    return aws.get_item(
        TableName=TABLE, Key={"pk": {"S": f"mem:{user_id}"}, "sk": {"S": f"ses:{session}"}}
    ).get("Item", {})


def test_ingest_skips_transient_turns_and_remembers_the_rest(call: Call, aws: Any) -> None:
    # When a Thai and English conversation is ingested (no Gemini key: the offline rules)
    answer = ingest(call, THAI_AND_ENGLISH)
    # Then the chatter is skipped and counted, and durable nuggets are made
    assert answer["statusCode"] == 200, answer
    out = answer["json"]
    assert out["skipped_transient"] == 3
    assert out["nuggets_created"] >= 3 and out["nuggets_updated"] == 0
    keys = {(n["category"], n["key"]) for n in out["nuggets"]}
    assert ("identity", "user_name") in keys and ("identity", "user_location") in keys
    assert any(cat == "context" for cat, _ in keys)  # the migration plan is kept as context
    # Thai stays Thai
    name = next(n for n in out["nuggets"] if n["key"] == "user_name")
    assert "สมชาย" in name["content"]
    # ingested nuggets are the service's writes on the user's behalf: agent, unverified
    assert {(n["source"], n["verified"]) for n in out["nuggets"]} == {("agent", False)}
    assert out["identity_updated"] is True
    # and every raw message is stored, with a TTL, and counted into the session
    assert int(session_item(aws)["msg_count"]["N"]) == len(THAI_AND_ENGLISH)
    raw = aws.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :p AND begins_with(sk, :m)",
        ExpressionAttributeValues={":p": {"S": "mem:alice"}, ":m": {"S": "msg:s1:"}},
    )["Items"]
    assert [r["sk"]["S"] for r in raw] == [f"msg:s1:{i:08d}" for i in range(1, 8)]
    assert all(int(r["ttl"]["N"]) > 0 for r in raw)


def test_a_changed_fact_updates_its_nugget_instead_of_adding_one(call: Call, aws: Any) -> None:
    ingest(call, [{"role": "user", "content": "I live in Bangkok"}])
    before = nugget_count(aws)
    moved = ingest(call, [{"role": "user", "content": "I live in Chiang Mai now"}])["json"]
    assert moved["nuggets_created"] == 0 and moved["nuggets_updated"] == 1
    assert nugget_count(aws) == before
    identity = get_alices_identity(call)
    assert identity["statusCode"] == 200
    assert "Chiang Mai" in identity["json"]["identity"] and "Bangkok" not in identity["json"]["identity"]


def test_the_identity_line_joins_identity_and_preferences(call: Call) -> None:
    ingest(
        call,
        [
            {"role": "user", "content": "ผมชื่อสมชาย"},
            {"role": "user", "content": "I prefer dark theme"},
            {"role": "user", "content": "ผมพูดภาษาไทยและอังกฤษ"},
        ],
    )
    answer = get_alices_identity(call)["json"]
    assert answer["userId"] == "alice"
    assert "สมชาย" in answer["identity"] and "dark" in answer["identity"].lower()
    # someone else's identity is forbidden; an unknown user has none
    other = call(
        "memory_identity",
        "GET",
        "/memory/identity/bob",
        route="/memory/identity/{userId}",
        path_params={"userId": "bob"},
        who=ALICE,
    )
    assert other["statusCode"] == 403
    none = call(
        "memory_identity",
        "GET",
        "/memory/identity/bob",
        route="/memory/identity/{userId}",
        path_params={"userId": "bob"},
        who=user("bob"),
    )
    assert none["json"] == {"userId": "bob", "identity": None}


def test_an_all_transient_batch_makes_no_model_call(
    call: Call, gemini_double: GeminiDouble, aws: Any
) -> None:
    answer = ingest(
        call,
        [
            {"role": "user", "content": "โอเค"},
            {"role": "user", "content": "ok thanks!"},
            {"role": "assistant", "content": "👍"},
        ],
    )
    assert answer["json"] == {
        "nuggets_created": 0,
        "nuggets_updated": 0,
        "skipped_transient": 3,
        "identity_updated": False,
        "nuggets": [],
        "overwrote_user": [],  # API.md, second release
    }
    assert gemini_double.requests == []
    assert int(session_item(aws)["msg_count"]["N"]) == 3


def test_the_same_ingest_sent_again_creates_nothing_new(call: Call, aws: Any) -> None:
    first = ingest(call, THAI_AND_ENGLISH)["json"]
    items_before = aws.scan(TableName=TABLE)["Count"]
    for _ in range(2):
        again = ingest(call, THAI_AND_ENGLISH)
        assert again["statusCode"] == 200 and again["json"] == first
    assert aws.scan(TableName=TABLE)["Count"] == items_before
    assert int(session_item(aws)["msg_count"]["N"]) == len(THAI_AND_ENGLISH)


def test_an_idempotency_key_tells_a_retry_from_the_same_turns_sent_again(call: Call, aws: Any) -> None:
    turn = [{"role": "user", "content": "ย้ายไปอยู่ภูเก็ตแล้ว and I work remotely now"}]
    body = {"sessionId": "s1", "messages": turn}

    def send(key: str, payload: dict[str, Any] = body) -> dict[str, Any]:
        return call(
            "memory_ingest", "POST", "/memory/ingest", body=payload, headers={key[0]: key[1]}, who=ALICE
        )

    # Given the same turn sent twice under two keys (a user who really said it twice)
    first = send(("idempotency-key", "turn-1"))
    second = send(("Idempotency-Key", "turn-2"))
    # Then both are ingests: the session counts two messages and stores both
    assert first["statusCode"] == 200 and second["statusCode"] == 200
    assert int(session_item(aws)["msg_count"]["N"]) == 2
    # When the first is retried under its key (any header case)
    items = aws.scan(TableName=TABLE)["Count"]
    retry = send(("IDEMPOTENCY-KEY", "turn-1"))
    # Then it is the first answer again, and nothing is written
    assert retry["statusCode"] == 200 and retry["json"] == first["json"]
    assert aws.scan(TableName=TABLE)["Count"] == items and int(session_item(aws)["msg_count"]["N"]) == 2
    # And a key reused with another body is refused, changing nothing
    other = send(
        ("idempotency-key", "turn-1"), {"sessionId": "s1", "messages": [{"role": "user", "content": "x y z"}]}
    )
    assert other["statusCode"] == 422, other
    assert other["json"]["error"]["details"][0]["loc"] == ["header", "idempotency-key"]
    assert aws.scan(TableName=TABLE)["Count"] == items
    # And an empty or oversized key is a 422 too
    for bad in ("", "k" * 256):
        assert send(("idempotency-key", bad))["statusCode"] == 422


def test_ingest_validates_its_body(call: Call, aws: Any) -> None:
    bad = [
        {"sessionId": "a:b", "messages": [{"role": "user", "content": "hi there"}]},
        {"sessionId": "s", "messages": []},
        {"sessionId": "s", "messages": [{"role": "robot", "content": "x"}]},
        {"sessionId": "s", "messages": [{"role": "user", "content": "x" * 8001}]},
        {"sessionId": "s", "messages": [{"role": "user", "content": "x"}] * 51},
    ]
    for body in bad:
        assert call("memory_ingest", "POST", "/memory/ingest", body=body, who=ALICE)["statusCode"] == 422, (
            body
        )
    assert ingest(call, THAI_AND_ENGLISH, who=agent(scopes="memory:read"))["statusCode"] == 403
    assert (
        call(
            "memory_ingest",
            "POST",
            "/memory/ingest",
            body={"userId": "bob", "sessionId": "s", "messages": THAI_AND_ENGLISH},
            who=ALICE,
        )["statusCode"]
        == 403
    )
    assert aws.scan(TableName=TABLE)["Count"] == 0


def test_every_fifteenth_message_puts_session_summary_due_on_the_bus(call: Call, aws: Any) -> None:
    # Given a rule on MemoryBus that copies SessionSummaryDue to a queue we can read
    sqs = boto3.client("sqs")
    queue = sqs.create_queue(QueueName="due")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    bus = boto3.client("events")
    bus.put_rule(
        Name="due",
        EventBusName="MemoryBus",
        EventPattern=json.dumps({"source": ["synapse.memory"], "detail-type": ["SessionSummaryDue"]}),
    )
    bus.put_targets(Rule="due", EventBusName="MemoryBus", Targets=[{"Id": "q", "Arn": arn}])
    # When 10, then 10 more, then 12 more messages arrive (32 in all: boundaries 15 and 30)
    for n, batch in enumerate([10, 10, 12]):
        ingest(
            call, [{"role": "user", "content": f"message {n}-{i} about the project"} for i in range(batch)]
        )
    # Then exactly two events, one per boundary
    bodies = []
    while True:
        got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
        if not got:
            break
        bodies += [json.loads(m["Body"]) for m in got]
    assert sorted(b["detail"]["msgCount"] for b in bodies) == [15, 30]
    assert {
        (b["source"], b["detail-type"], b["detail"]["userId"], b["detail"]["sessionId"]) for b in bodies
    } == {("synapse.memory", "SessionSummaryDue", "alice", "s1")}


def summarizer_event(count: int, session: str = "s1") -> dict[str, Any]:
    event = sample_event("summarize_session")
    event["detail"] = {"userId": "alice", "sessionId": session, "msgCount": count}
    return event


def test_the_summarizer_writes_one_chunk_per_boundary_however_often_delivered(call: Call, aws: Any) -> None:
    ingest(
        call, [{"role": "user", "content": f"ข้อความที่ {i}: เรากำลังย้ายระบบไป Kubernetes"} for i in range(15)]
    )
    summarizer = load_function("summarize_session")
    results = [summarizer.handler(summarizer_event(15), LambdaContext()) for _ in range(3)]
    assert [r["chunk_id"] for r in results] == ["sum:s1:chunk_1", None, None]
    listed = summaries_of(call, "s1")
    assert len(listed) == 1
    assert listed[0]["chunk_id"] == "sum:s1:chunk_1" and listed[0]["msg_count"] == 15
    assert "Kubernetes" in listed[0]["summary"]


def test_summarize_on_demand_numbers_chunks_in_write_order(call: Call) -> None:
    ingest(
        call,
        [{"role": "user", "content": f"We discussed release plan number {i} in detail"} for i in range(4)],
    )
    stored = call("memory_summarize", "POST", "/memory/summarize", body={"sessionId": "s1"}, who=ALICE)
    assert stored["statusCode"] == 200 and stored["json"]["chunk_id"] == "sum:s1:chunk_1"
    assert "release plan" in stored["json"]["summary"]
    given = call(
        "memory_summarize",
        "POST",
        "/memory/summarize",
        body={"sessionId": "s1", "messages": [{"role": "user", "content": "ตกลงว่าจะเปิดตัววันจันทร์หน้า"}]},
        who=ALICE,
    )
    assert given["json"]["chunk_id"] == "sum:s1:chunk_2" and "จันทร์" in given["json"]["summary"]
    empty = call(
        "memory_summarize", "POST", "/memory/summarize", body={"sessionId": "nothing-here"}, who=ALICE
    )
    assert empty["statusCode"] == 404
    chunks = summaries_of(call, "s1")
    assert [c["chunk_id"] for c in chunks] == ["sum:s1:chunk_1", "sum:s1:chunk_2"]
    bad = call(
        "memory_summaries",
        "GET",
        "/memory/summaries/a:b",
        route="/memory/summaries/{sessionId}",
        path_params={"sessionId": "a:b"},
        who=ALICE,
    )
    assert bad["statusCode"] == 422


def test_recall_finds_the_relevant_memory_with_identity(call: Call) -> None:
    ingest(call, THAI_AND_ENGLISH)
    call(
        "memory_create",
        "POST",
        "/memory",
        body={"category": "skill", "key": "cooking", "content": "Cooks green curry every Sunday"},
        who=ALICE,
    )
    answer = recall(call, "Kubernetes migration of billing", limit=3)
    assert answer["statusCode"] == 200
    out = answer["json"]
    assert "สมชาย" in out["identity"]
    top = out["memories"][0]
    assert "Kubernetes" in top["text"] and top["type"] == "context"
    assert set(top) == {
        "id",
        "text",
        "type",
        "key",
        "score",
        "priority",
        "verified",
        "created_at",
        "valid_at",
    }
    assert len(out["memories"]) <= 3
    assert recall(call, "green curry")["json"]["memories"][0]["key"] == "cooking"
    only_skills = recall(call, "Kubernetes", category="skill")["json"]["memories"]
    assert {m["type"] for m in only_skills} == {"skill"}


def test_recall_hides_expired_and_other_users_memories(call: Call) -> None:
    call(
        "memory_create",
        "POST",
        "/memory",
        body={
            "category": "fact",
            "key": "old_car",
            "content": "Drives a red Toyota",
            "expires_at": "2020-01-01T00:00:00Z",
        },
        who=ALICE,
    )
    call(
        "memory_create",
        "POST",
        "/memory",
        body={"category": "fact", "key": "bobs_car", "content": "Drives a red Toyota"},
        who=user("bob"),
    )
    assert recall(call, "red Toyota")["json"] == {"memories": [], "identity": None}


def test_recall_validates_its_body(call: Call) -> None:
    for body in [
        {"query": ""},
        {"query": "x" * 2001},
        {"query": "x", "limit": 0},
        {"query": "x", "limit": 51},
        {"query": "x", "category": "nope"},
    ]:
        assert call("memory_recall", "POST", "/memory/recall", body=body, who=ALICE)["statusCode"] == 422, (
            body
        )
    assert recall(call, "x", who=agent(scopes="memory:write"))["statusCode"] == 403


@pytest.fixture
def gemini_extraction(gemini_double: GeminiDouble) -> GeminiDouble:
    """The double answers extraction with two nuggets (one Thai identity fact)."""

    def generate(body: dict[str, Any]) -> str:
        assert body["generationConfig"]["responseMimeType"] == "application/json"
        assert (
            "responseSchema" in body["generationConfig"] or "responseJsonSchema" in body["generationConfig"]
        )
        return json.dumps(
            {
                "nuggets": [
                    {
                        "category": "identity",
                        "key": "user_name",
                        "content": "ชื่อ สมชาย",
                        "tags": ["name"],
                        "priority": "high",
                        "confidence": 0.9,
                        "is_identity": True,
                    },
                    {
                        "category": "project",
                        "key": "billing_migration",
                        "content": "Migrating billing from Docker Swarm to Kubernetes",
                        "tags": ["k8s"],
                        "priority": "normal",
                        "confidence": 0.8,
                        "is_identity": False,
                    },
                ]
            },
            ensure_ascii=False,
        )

    gemini_double.generate = generate
    return gemini_double


def test_with_gemini_one_extraction_and_one_batched_embedding_per_ingest(
    call: Call, gemini_extraction: GeminiDouble
) -> None:
    answer = ingest(call, THAI_AND_ENGLISH)
    assert answer["statusCode"] == 200, answer
    assert {n["key"] for n in answer["json"]["nuggets"]} == {"user_name", "billing_migration"}
    assert len(gemini_extraction.calls("generateContent")) == 1
    embeds = gemini_extraction.calls("batchEmbedContents")
    assert len(embeds) == 1 and len(embeds[0].embedded_texts()) == 2
    assert all(r["outputDimensionality"] == 768 for r in embeds[0].body["requests"])
    # the extraction prompt saw the conversation but not the transient turns
    prompt = json.dumps(gemini_extraction.calls("generateContent")[0].body, ensure_ascii=False)
    assert "สมชาย" in prompt and "user: 555" not in prompt and "user: ขอบคุณ" not in prompt
    # and recall embeds the query through Gemini too, and finds the project
    found = recall(call, "Kubernetes")
    assert found["json"]["memories"][0]["key"] == "billing_migration"
    assert len(gemini_extraction.calls("batchEmbedContents")) == 2


def test_when_gemini_stays_down_ingest_is_503_and_raw_messages_are_kept(
    call: Call, gemini_double: GeminiDouble, aws: Any
) -> None:
    gemini_double.fail_next(3, 503)  # every attempt the client makes (GEMINI_ATTEMPTS=3 in the double)
    answer = ingest(call, THAI_AND_ENGLISH)
    assert answer["statusCode"] == 503
    assert (
        answer["json"]["error"]["code"] == "upstream_unavailable"
        and int(answer["headers"]["retry-after"]) > 0
    )
    assert nugget_count(aws) == 0
    assert int(session_item(aws)["msg_count"]["N"]) == len(THAI_AND_ENGLISH)
    # the client retries once Gemini is back: the raw messages are not stored twice
    gemini_double.generate = lambda body: json.dumps(
        {
            "nuggets": [
                {
                    "category": "fact",
                    "key": "k",
                    "content": "c",
                    "tags": [],
                    "priority": "normal",
                    "confidence": 0.7,
                    "is_identity": False,
                }
            ]
        }
    )
    retry = ingest(call, THAI_AND_ENGLISH)
    assert retry["statusCode"] == 200 and retry["json"]["nuggets_created"] == 1
    assert int(session_item(aws)["msg_count"]["N"]) == len(THAI_AND_ENGLISH)


def test_the_identity_line_follows_identity_memories_written_directly(call: Call) -> None:
    # When a user stores an identity memory through POST /memory, the line has it
    mem = call(
        "memory_create",
        "POST",
        "/memory",
        body={"category": "identity", "key": "user_name", "content": "ชื่อ มานี"},
        who=ALICE,
    )["json"]
    assert alices_identity(call) == "ชื่อ มานี"
    # a memory of another category does not change it
    call(
        "memory_create",
        "POST",
        "/memory",
        body={"category": "fact", "key": "f", "content": "likes trains"},
        who=ALICE,
    )
    assert alices_identity(call) == "ชื่อ มานี"
    # and deleting the memory takes it out of the line
    call(
        "memory_delete",
        "DELETE",
        f"/memory/{mem['id']}",
        route="/memory/{id}",
        path_params={"id": mem["id"]},
        who=ALICE,
    )
    assert alices_identity(call) is None


def test_the_same_ingest_arriving_while_the_first_still_runs_is_409(
    call: Call, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the first request is still in progress when its twin arrives
    from synapse.services.chat import ingest as ingest_module

    inner = ingest_module.ingest
    twin: dict[str, Any] = {}

    def slow_first(*args: Any, **kwargs: Any) -> Any:
        if not twin:
            twin["answer"] = ingest(call, THAI_AND_ENGLISH)
        return inner(*args, **kwargs)

    monkeypatch.setattr(ingest_module, "ingest", slow_first)
    first = ingest(call, THAI_AND_ENGLISH)
    # Then the twin is told to retry (409 in the envelope) and the first completes
    assert twin["answer"]["statusCode"] == 409 and twin["answer"]["json"]["error"]["code"] == "conflict"
    assert first["statusCode"] == 200


def test_raw_messages_past_their_ttl_are_neither_summarized_nor_exported(call: Call, aws: Any) -> None:
    # Given messages stored 8 days ago (TTL 7 days) that DynamoDB has not yet swept, and a fresh one
    from datetime import timedelta

    from synapse.core.models.base import utcnow
    from synapse.store import conversations
    from synapse.store.keys import Space

    old = utcnow() - timedelta(days=8)
    alice = Space("alice")
    conversations.append_messages(
        alice, "s1", [("user", "an old secret")], request_id="old", now=old, ttl_days=7
    )
    conversations.append_messages(
        alice, "s1", [("user", "a fresh fact")], request_id="new", now=utcnow(), ttl_days=7
    )
    # When the session is summarized from its stored messages, and everything is exported
    summary = call("memory_summarize", "POST", "/memory/summarize", body={"sessionId": "s1"}, who=ALICE)
    export = call("me_export", "GET", "/me/export", who=ALICE)["json"]
    # Then only the fresh message is read
    assert summary["statusCode"] == 200, summary
    assert "old secret" not in summary["json"]["summary"] and "fresh fact" in summary["json"]["summary"]
    [session] = export["sessions"]
    assert [m["content"] for m in session["messages"]] == ["a fresh fact"]


def test_a_memory_that_expires_leaves_the_identity_line(call: Call, monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import timedelta

    from synapse.core.models.base import iso, utcnow
    from synapse.services.memory import identity as identity_module

    # Given a lasting identity memory and one that expires in an hour
    now = utcnow()
    for key, content, extra in [
        ("user_name", "ชื่อ มานี", {}),
        ("current_city", "Lives in Chiang Mai", {"expires_at": iso(now + timedelta(hours=1))}),
    ]:
        body = {"category": "identity", "key": key, "content": content, **extra}
        assert call("memory_create", "POST", "/memory", body=body, who=ALICE)["statusCode"] == 201
    assert "Chiang Mai" in alices_identity(call) and "มานี" in alices_identity(call)
    # When two hours have passed (nothing was written since)
    monkeypatch.setattr(identity_module, "utcnow", lambda: now + timedelta(hours=2))

    def no_write(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a reader wrote (its IAM policy is read-only)")

    monkeypatch.setattr(identity_module.conversations, "put_identity", no_write)
    # Then neither the identity route nor recall shows the expired memory through the line
    assert alices_identity(call) == "ชื่อ มานี"
    answer = call("memory_recall", "POST", "/memory/recall", body={"query": "where does she live"}, who=ALICE)
    assert answer["json"]["identity"] == "ชื่อ มานี"


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (["ok", "thanks!", "👍"], "Nothing to remember"),
        (["ขอบคุณครับ", "555", "โอเค"], "ไม่มีเรื่องที่ต้องจำ"),
    ],
)
def test_a_summary_of_only_transient_turns_says_so_instead_of_being_empty(
    call: Call, messages: list[str], expected: str
) -> None:
    body = {"sessionId": "chit", "messages": [{"role": "user", "content": m} for m in messages]}
    answer = call("memory_summarize", "POST", "/memory/summarize", body=body, who=ALICE)
    assert answer["statusCode"] == 200, answer
    assert answer["json"]["summary"].startswith(expected)
    chunks = summaries_of(call, "chit")
    assert [c["summary"] for c in chunks] == [answer["json"]["summary"]]


def test_an_ingest_body_is_parsed_once(call: Call, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given every JSON parse of the process is counted
    import json

    body = {"sessionId": "s-once", "messages": [{"role": "user", "content": "I live in Chiang Mai"}]}
    text = json.dumps(body)
    real = json.loads
    parsed: list[str] = []

    def counting(s: Any, *args: Any, **kwargs: Any) -> Any:
        if s == text:
            parsed.append(s)
        return real(s, *args, **kwargs)

    monkeypatch.setattr(json, "loads", counting)
    # When an ingest arrives
    answer = call("memory_ingest", "POST", "/memory/ingest", raw_body=text, who=ALICE)
    # Then it was answered, and its body parsed a single time (pre-checks and validation share it)
    assert answer["statusCode"] == 200, answer
    assert len(parsed) == 1


def _race_on_save(monkeypatch: pytest.MonkeyPatch, meanwhile: Any) -> None:
    """Run `meanwhile()` once, between an ingest's read of the memories and its write of them."""
    from synapse.services.chat import ingest as ingest_module
    from synapse.store import nuggets

    real_save = nuggets.save
    done: list[bool] = []

    def save_after_a_rival(space: Any, changes: Any) -> None:
        if not done and len(changes) > 1:
            done.append(True)
            meanwhile()
        real_save(space, changes)

    monkeypatch.setattr(ingest_module.nuggets, "save", save_after_a_rival)
    assert not done


def test_a_put_landing_between_an_ingests_read_and_write_is_not_overwritten_unseen(
    call: Call, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given alice's name, and an ingest that will change it
    first = ingest(call, [{"role": "user", "content": "My name is Alice and I live in Berlin"}])["json"]
    name = next(m for m in first["nuggets"] if m["category"] == "identity" and "Alice" in m["content"])
    put: dict[str, Any] = {}

    def rival() -> None:
        put["answer"] = call(
            "memory_update",
            "PUT",
            f"/memory/{name['id']}",
            body={"expires_at": "2099-01-01T00:00:00Z"},
            path_params={"id": name["id"]},
            route="/memory/{id}",
            who=ALICE,
        )

    _race_on_save(monkeypatch, rival)
    # When a PUT of that memory lands after the ingest read it and before it writes
    second = ingest(call, [{"role": "user", "content": "My name is Alicia and I live in Munich"}])["json"]
    # Then the PUT went in, and the ingest redid its change on top of it (read again), not over it blind:
    # the expiry the PUT set (which an ingest keeps) is still there
    assert put["answer"]["statusCode"] == 200
    got = call(
        "memory_get",
        "GET",
        f"/memory/{name['id']}",
        path_params={"id": name["id"]},
        route="/memory/{id}",
        who=ALICE,
    )["json"]
    assert "Alicia" in got["content"] and got["expires_at"] == "2099-01-01T00:00:00Z"
    assert name["id"] in [m["id"] for m in second["nuggets"]]


def test_a_delete_landing_between_an_ingests_read_and_write_stays_deleted(
    call: Call, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given alice's city, and an ingest that will change it
    first = ingest(call, [{"role": "user", "content": "My name is Alice and I live in Berlin"}])["json"]
    city = next(m for m in first["nuggets"] if "Berlin" in m["content"])

    def rival() -> None:
        assert (
            call(
                "memory_delete",
                "DELETE",
                f"/memory/{city['id']}",
                path_params={"id": city["id"]},
                route="/memory/{id}",
                who=ALICE,
            )["statusCode"]
            == 204
        )

    _race_on_save(monkeypatch, rival)
    # When the memory is deleted after the ingest read it and before it writes
    second = ingest(call, [{"role": "user", "content": "My name is Alice and I live in Munich"}])["json"]
    # Then the deletion (the newer act) stands, and the answer does not claim the nugget
    got = call(
        "memory_get",
        "GET",
        f"/memory/{city['id']}",
        path_params={"id": city["id"]},
        route="/memory/{id}",
        who=ALICE,
    )
    assert got["statusCode"] == 404
    assert city["id"] not in [m["id"] for m in second["nuggets"]]
