"""Change events end to end in moto: writes through the handlers → the table's stream (moto's
DynamoDB Streams, filtered by the template's own FilterCriteria) → the change-events function →
PutEvents on MemoryBus → a rule → an SQS queue the test reads; and the pull feed through its handler."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.lambdas import LambdaContext, agent, load_function, template, user
from local.events import matches
from synapse.core import state
from synapse.core.models.base import Category
from synapse.core.models.memory import Memory
from synapse.store import changelog, nuggets
from synapse.store.keys import Space
from tests.conftest import TABLE, Call

STREAMS_ENDPOINT = "https://streams.dynamodb.us-east-1.amazonaws.com"  # (botocore's default is per account)


def stream_filters() -> list[dict[str, Any]]:
    props = template()["Resources"]["ChangeEventsFunction"]["Properties"]["Events"]["Stream"]["Properties"]
    return [json.loads(f["Pattern"]) for f in props["FilterCriteria"]["Filters"]]


class Pipeline:
    """The memory table's stream as Lambda's event source mapping reads it, the change-events
    function, and a queue behind a rule on MemoryBus that receives every event it puts."""

    def __init__(self, ddb: Any) -> None:
        view = template()["Resources"]["MemoryTable"]["Properties"]["StreamSpecification"]
        desc = ddb.update_table(TableName=TABLE, StreamSpecification={"StreamEnabled": True, **view})
        self.arn = desc["TableDescription"]["LatestStreamArn"]
        self.streams = boto3.client("dynamodbstreams", endpoint_url=STREAMS_ENDPOINT)
        shard = self.streams.describe_stream(StreamArn=self.arn)["StreamDescription"]["Shards"][0]["ShardId"]
        self.iterator = self.streams.get_shard_iterator(
            StreamArn=self.arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        self.filters = stream_filters()
        self.function = load_function("change_events")
        sqs = boto3.client("sqs")
        self.queue = sqs.create_queue(QueueName=f"events-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=self.queue, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        bus = boto3.client("events")
        bus.put_rule(
            Name="changes", EventBusName="MemoryBus", EventPattern=json.dumps({"source": ["synapse.memory"]})
        )
        bus.put_targets(Rule="changes", EventBusName="MemoryBus", Targets=[{"Id": "q", "Arn": queue_arn}])
        self.sqs = sqs
        self.passed: list[dict[str, Any]] = []  # records the filter let through

    @staticmethod
    def _held(keys: dict[str, Any]) -> bool:
        return "Item" in boto3.client("dynamodb").get_item(TableName=TABLE, Key=keys, ConsistentRead=True)

    def records(self) -> list[dict[str, Any]]:
        """The stream's new records since the last read."""
        out: list[dict[str, Any]] = []
        while True:
            page = self.streams.get_records(ShardIterator=self.iterator)
            self.iterator = page["NextShardIterator"]
            out += page["Records"]
            if not page["Records"]:
                return out

    def run(self, committed_only: bool = False) -> list[dict[str, Any]]:
        """Deliver the new records the filter passes (batches of 100, as the template says) and return
        the events the rule received, as EventBridge events. `committed_only`: leave out the records
        of entries the table does not hold (moto streams the Puts of a cancelled transaction)."""
        passed = [r for r in self.records() if any(matches(p, r) for p in self.filters)]
        if committed_only:
            passed = [r for r in passed if self._held(r["dynamodb"]["Keys"])]
        self.passed += passed
        for start in range(0, len(passed), 100):
            answer = self.function.handler({"Records": passed[start : start + 100]}, LambdaContext())
            assert answer == {"batchItemFailures": []}
        received: list[dict[str, Any]] = []
        while True:
            got = self.sqs.receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10)
            messages = got.get("Messages", [])
            if not messages:
                return [e for e in received if e["detail-type"] != "SessionSummaryDue"]
            for message in messages:
                received.append(json.loads(message["Body"]))
                self.sqs.delete_message(QueueUrl=self.queue, ReceiptHandle=message["ReceiptHandle"])


@pytest.fixture
def pipeline(aws: Any) -> Iterator[Pipeline]:
    yield Pipeline(aws)


def by_seq(events: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Events as receivers are told to read them: ordered by (mind, seq)."""
    ordered = sorted(events, key=lambda e: (e["detail"]["mindId"], e["detail"]["seq"]))
    return [(e["detail-type"], e["detail"]) for e in ordered]


def memory_route(
    call: Call, function: str, method: str, mid: str, suffix: str, who: dict[str, str], **kwargs: Any
) -> dict[str, Any]:
    """A call of a route on one memory (`/memory/{id}` + suffix)."""
    path, route = f"/memory/{mid}{suffix}", f"/memory/{{id}}{suffix}"
    return call(function, method, path, route=route, path_params={"id": mid}, who=who, **kwargs)


def delete_mind(call: Call, who: dict[str, str], mind: str) -> int:
    path, params = f"/minds/{mind}", {"mindId": mind}
    return int(
        call("minds_delete", "DELETE", path, route="/minds/{mindId}", path_params=params, who=who)[
            "statusCode"
        ]
    )


def ingest(call: Call, who: dict[str, str], text: str) -> dict[str, Any]:
    body = {"sessionId": "s1", "messages": [{"role": "user", "content": text}]}
    answer = call("memory_ingest", "POST", "/memory/ingest", who=who, body=body)
    assert answer["statusCode"] == 200, answer["json"]
    return dict(answer["json"])


FACTS = "I live in Lisbon and I work as a nurse. My favourite editor is vim."


def created(
    call: Call, who: dict[str, str], key: str, content: str, mind: str | None = None
) -> dict[str, Any]:
    headers = {"x-mind-id": mind} if mind else None
    body = {"category": "fact", "key": key, "content": content}
    answer = call("memory_create", "POST", "/memory", body=body, who=who, headers=headers)
    assert answer["statusCode"] in (200, 201), answer["json"]
    return dict(answer["json"])


def test_every_kind_of_write_becomes_its_event_with_the_contracts_detail(
    call: Call, pipeline: Pipeline
) -> None:
    alice = user("alice")
    # Given a memory created, updated by key, updated by id, verified, restored and deleted, a
    # summary written, and a mind with one memory that is then deleted
    first = created(call, alice, "home", "Lives in Lisbon")
    mid = first["id"]
    created(call, alice, "home", "Lives in Porto")
    put = memory_route(call, "memory_update", "PUT", mid, "", alice, body={"content": "Lives in Braga"})
    assert put["statusCode"] == 200
    assert memory_route(call, "memory_verify", "POST", mid, "/verify", alice)["statusCode"] == 200
    restored = memory_route(call, "memory_restore", "POST", mid, "/restore", alice, body={"version": 1})
    assert restored["statusCode"] == 200, restored["json"]
    assert memory_route(call, "memory_delete", "DELETE", mid, "", alice)["statusCode"] == 204
    talk = {
        "sessionId": "chat-1",
        "messages": [{"role": "user", "content": "We planned the Lisbon trip for May"}],
    }
    summary = call("memory_summarize", "POST", "/memory/summarize", who=alice, body=talk)
    assert summary["statusCode"] in (200, 201), summary["json"]
    mind = call("minds_create", "POST", "/minds", body={"name": "work"}, who=alice)["json"]["mind_id"]
    other = created(call, alice, "desk", "Sits by the window", mind=mind)["id"]
    assert delete_mind(call, alice, mind) == 204
    # When the stream is delivered
    events = pipeline.run()
    # Then each change is one event on MemoryBus, from synapse.memory, with the contract's detail
    assert all(e["source"] == "synapse.memory" for e in events)
    base, work = {"userId": "alice", "mindId": "default"}, {"userId": "alice", "mindId": mind}
    chunk = summary["json"]["chunk_id"]
    assert by_seq(events) == [
        ("memory.created", {**base, "seq": 1, "memoryId": mid, "version": 1, "change": "created"}),
        ("memory.updated", {**base, "seq": 2, "memoryId": mid, "version": 2, "change": "updated"}),
        ("memory.updated", {**base, "seq": 3, "memoryId": mid, "version": 3, "change": "updated"}),
        ("memory.verified", {**base, "seq": 4, "memoryId": mid, "version": 4, "change": "verified"}),
        ("memory.restored", {**base, "seq": 5, "memoryId": mid, "version": 5, "change": "restored"}),
        ("memory.deleted", {**base, "seq": 6, "memoryId": mid, "version": 5, "change": "deleted"}),
        ("summary.created", {**base, "seq": 7, "sessionId": "chat-1", "chunkId": chunk}),
        ("memory.created", {**work, "seq": 1, "memoryId": other, "version": 1, "change": "created"}),
        ("mind.deleted", {**work, "seq": 2}),
    ]
    # And only the new change-log entries passed the stream's filter (not memories, versions, messages,
    # the version item, the entries' deletion with their mind)
    assert len(pipeline.passed) == 9
    assert all(":chg:" in ":" + r["dynamodb"]["Keys"]["sk"]["S"] for r in pipeline.passed)


def test_a_write_that_did_not_commit_has_no_entry_and_no_event(call: Call, pipeline: Pipeline) -> None:
    alice = user("alice")
    # Given a memory, read by two writers
    mid = created(call, alice, "editor", "Uses vim")["id"]
    space = Space("alice")
    stale = nuggets.get(space, mid)
    assert stale is not None
    pipeline.run()

    def change(read: nuggets.Stored, content: str) -> nuggets.Write:
        memory = Memory(
            **{**read.memory.model_dump(), "content": content, "version": read.memory.version + 1}
        )
        return nuggets.Write(memory=memory, read=read)

    # When one writer's change commits and the other's loses the race (its read is stale now)...
    nuggets.save(space, [change(stale, "Uses helix")])
    with pytest.raises(nuggets.LostRace):
        nuggets.save(space, [change(stale, "Uses emacs")])
    # ...and a write the service refuses, and a deletion of what is not there
    bad = call(
        "memory_create",
        "POST",
        "/memory",
        body={"category": "fact", "key": "Bad Key", "content": "x"},
        who=alice,
    )
    assert bad["statusCode"] == 422
    nobody = "00000000-0000-0000-0000-000000000000"
    assert memory_route(call, "memory_delete", "DELETE", nobody, "", alice)["statusCode"] == 404
    # Then the log holds the committed change only...
    assert changelog.read(space).seq == 2
    rows = feed(call, alice, after=1)["json"]["changes"]
    assert [(r["seq"], r["change"], r["version"]) for r in rows] == [(2, "updated", 2)]
    # ...and so do the events. (moto's stream also carries the Put of a cancelled transaction, which
    # DynamoDB's never does: the records of entries the table does not hold are left out here; the
    # local run's stream, made from committed writes only, is checked for this in
    # tests/unit/test_local_streams.py.)
    events = pipeline.run(committed_only=True)
    assert [(t, d["seq"], d["version"]) for t, d in by_seq(events)] == [("memory.updated", 2, 2)]


def test_an_ingest_of_several_memories_shares_one_seq(call: Call, pipeline: Pipeline) -> None:
    alice = user("alice")
    written = {n["id"] for n in ingest(call, alice, FACTS)["nuggets"]}
    assert len(written) >= 2
    events = pipeline.run()
    assert {e["detail"]["memoryId"] for e in events} == written
    assert {e["detail"]["seq"] for e in events} == {1}
    assert {e["detail-type"] for e in events} == {"memory.created"}


# --- isolation, as a property ------------------------------------------------------------------------

ops = st.lists(
    st.tuples(
        st.integers(0, 1),  # user
        st.booleans(),  # in the user's second mind
        st.sampled_from(["write", "write", "delete"]),
        st.sampled_from(["a", "b", "c"]),  # key
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=ops)
def test_a_users_events_name_only_that_users_data_in_each_minds_order(
    call: Call, pipeline: Pipeline, script: list[tuple[int, bool, str, str]]
) -> None:
    # Given two fresh users, each with the default mind and one more, and random writes and deletes
    tok = uuid.uuid4().hex[:8]
    users = [f"u{i}{tok}" for i in range(2)]
    minds = {
        u: call("minds_create", "POST", "/minds", body={"name": "second"}, who=user(u))["json"]["mind_id"]
        for u in users
    }
    owned: dict[tuple[str, str], set[str]] = {}  # (user, mind) → every memory id written there
    commits: dict[tuple[str, str], int] = {}
    for who, second, op, key in script:
        uid = users[who]
        mind = minds[uid] if second else "default"
        headers = {"x-mind-id": mind}
        if op == "write":
            mid = created(call, user(uid), key, f"{uid} {key} {time.time()}", mind=mind)["id"]
            owned.setdefault((uid, mind), set()).add(mid)
            commits[(uid, mind)] = commits.get((uid, mind), 0) + 1
        else:
            mid = nuggets.id_for(Space(uid, mind), Category.fact, key)
            answer = memory_route(call, "memory_delete", "DELETE", mid, "", user(uid), headers=headers)
            if answer["statusCode"] == 204:
                commits[(uid, mind)] = commits.get((uid, mind), 0) + 1
    # When the stream is delivered
    events = [e for e in pipeline.run() if e["detail"]["userId"] in users]
    # Then each event names the user and mind that wrote it, and only memories of that mind
    for e in events:
        d = e["detail"]
        assert d["memoryId"] in owned.get((d["userId"], d["mindId"]), set()), d
    # and each mind's events are its commits, seq 1..n, one each (single-memory writes)
    for place, count in commits.items():
        seqs = sorted(
            e["detail"]["seq"] for e in events if (e["detail"]["userId"], e["detail"]["mindId"]) == place
        )
        assert seqs == list(range(1, count + 1)), place
    assert len(events) == sum(commits.values())
    state.reset()


# --- the pull feed --------------------------------------------------------------------------------


def feed(
    call: Call, who: dict[str, str], headers: dict[str, str] | None = None, **query: int
) -> dict[str, Any]:
    return call(
        "memory_changes",
        "GET",
        "/memory/changes",
        who=who,
        headers=headers,
        query={k: str(v) for k, v in query.items()},
    )


def test_the_feed_pages_through_a_minds_changes_oldest_first(call: Call) -> None:
    alice = user("alice")
    ids = [created(call, alice, f"k{i}", f"note {i}")["id"] for i in range(5)]
    created(call, alice, "k0", "note 0 again")
    assert memory_route(call, "memory_delete", "DELETE", ids[1], "", alice)["statusCode"] == 204
    # When it is read two rows at a time from the start
    rows: list[dict[str, Any]] = []
    after, pages = 0, 0
    while True:
        page = feed(call, alice, after=after, limit=2)
        assert page["statusCode"] == 200, page["json"]
        rows += page["json"]["changes"]
        pages += 1
        if page["json"]["next_after"] == after:
            break
        assert len(page["json"]["changes"]) <= 2
        after = page["json"]["next_after"]
    # Then every change is there once, in order, in the history's words
    assert [(r["seq"], r["memory_id"], r["change"], r["version"]) for r in rows] == [
        *[(i + 1, ids[i], "created", 1) for i in range(5)],
        (6, ids[0], "updated", 2),
        (7, ids[1], "deleted", 1),
    ]
    assert all(r["at"].endswith("Z") for r in rows)
    assert pages == 5  # 2 + 2 + 2 + 1, and the empty page that says "nothing after 7"
    # And reading past the end is an empty page that stays where it is
    assert feed(call, alice, after=7)["json"] == {"changes": [], "next_after": 7}


def test_one_write_of_many_memories_is_one_page_even_past_the_limit(call: Call) -> None:
    alice = user("alice")
    count = len(ingest(call, alice, FACTS)["nuggets"])
    assert count >= 2
    page = feed(call, alice, after=0, limit=1)["json"]
    assert {r["seq"] for r in page["changes"]} == {1} and len(page["changes"]) == count
    assert page["next_after"] == 1


def test_a_position_past_what_is_kept_is_410_gone(call: Call, monkeypatch: pytest.MonkeyPatch) -> None:
    alice = user("alice")
    for i in range(3):
        created(call, alice, f"k{i}", f"note {i}")
    # Given a position the mind never had (another epoch's, e.g. from before DELETE /me)
    answer = feed(call, alice, after=9)
    assert answer["statusCode"] == 410
    assert answer["json"]["error"]["code"] == "gone"
    # When the entries have expired (kept CHANGE_LOG_DAYS) but DynamoDB has not deleted them yet
    later = time.time() + changelog.CHANGE_LOG_DAYS * 86400 + 60
    with monkeypatch.context() as clock:
        clock.setattr(changelog.time, "time", lambda: later)
        # Then a position before them is gone, and 0 starts at the oldest kept (none)
        assert feed(call, alice, after=1)["statusCode"] == 410
        assert feed(call, alice, after=0)["json"]["changes"] == []
    # And when only the oldest has expired, 0 starts after it
    ddb, space = boto3.client("dynamodb"), Space("alice")
    ddb.update_item(
        TableName=TABLE,
        Key={"pk": {"S": space.pk}, "sk": {"S": "chg:000000000001"}},
        UpdateExpression="SET #t = :past",
        ExpressionAttributeNames={"#t": "ttl"},
        ExpressionAttributeValues={":past": {"N": str(int(time.time()) - 1)}},
    )
    assert [r["seq"] for r in feed(call, alice, after=0)["json"]["changes"]] == [2, 3]
    assert feed(call, alice, after=0)["json"]["next_after"] == 3
    # And once one is deleted, a position whose next entry is absent is gone too
    boto3.client("dynamodb").delete_item(
        TableName=TABLE, Key={"pk": {"S": space.pk}, "sk": {"S": "chg:000000000002"}}
    )
    assert feed(call, alice, after=1)["statusCode"] == 410
    assert [r["seq"] for r in feed(call, alice, after=2)["json"]["changes"]] == [3]


def test_bad_positions_and_limits_are_422(call: Call) -> None:
    alice = user("alice")
    for query in ({"after": -1}, {"limit": 0}, {"limit": 1001}):
        answer = feed(call, alice, **query)
        assert answer["statusCode"] == 422, query
        assert answer["json"]["error"]["code"] == "validation_error"


def test_the_feed_is_one_minds_and_a_mind_key_reads_its_own_only(call: Call) -> None:
    alice = user("alice")
    mind = call("minds_create", "POST", "/minds", body={"name": "work"}, who=alice)["json"]["mind_id"]
    home = created(call, alice, "home", "Lives in Lisbon")["id"]
    desk = created(call, alice, "desk", "Sits by the window", mind=mind)["id"]
    created(call, user("bob"), "home", "Lives in Oslo")
    # The default mind's feed, the other mind's (X-Mind-Id), and bob's are each their own
    assert [r["memory_id"] for r in feed(call, alice, after=0)["json"]["changes"]] == [home]
    in_work = feed(call, alice, {"x-mind-id": mind}, after=0)["json"]["changes"]
    assert [r["memory_id"] for r in in_work] == [desk]
    assert home not in json.dumps(feed(call, user("bob"), after=0)["json"])
    # A Mind Key of that mind reads its feed, and not the default mind's
    key = {**agent("alice", scopes="memory:read"), "mindId": mind}
    assert [r["memory_id"] for r in feed(call, key, after=0)["json"]["changes"]] == [desk]
    assert feed(call, key, {"x-mind-id": "default"}, after=0)["statusCode"] == 403
    # An API key without memory:read cannot read it
    assert feed(call, agent("alice", scopes="memory:write"), after=0)["statusCode"] == 403
