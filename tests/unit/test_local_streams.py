"""The local run's DynamoDB stream: records made from committed writes at moto's server, journaled with
them, handed to the trigger's function as Lambda's event source mapping would (filter, batches,
partial failures, retries), acknowledged, and delivered again after a restart if they were not."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from local.events import EventDispatcher
from local.journal import EVENT_OP, STREAM_OP, Acks, Journal, MotoTap, undelivered
from local.streams import LocalStreams, StreamPoller
from local.template import RuleDef, StreamSourceDef, parse
from tests.unit.local_moto import client, moto_server

TEMPLATE = """
Resources:
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      AttributeDefinitions:
        - {AttributeName: pk, AttributeType: S}
        - {AttributeName: sk, AttributeType: S}
      KeySchema:
        - {AttributeName: pk, KeyType: HASH}
        - {AttributeName: sk, KeyType: RANGE}
      StreamSpecification: {StreamViewType: NEW_IMAGE}
  Other:
    Type: AWS::DynamoDB::Table
    Properties:
      AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
      KeySchema: [{AttributeName: pk, KeyType: HASH}]
  ConsumerFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/consumer/
      Handler: app.handler
      Events:
        Stream:
          Type: DynamoDB
          Properties:
            Stream: !GetAtt Table.StreamArn
            StartingPosition: TRIM_HORIZON
            BatchSize: 3
            MaximumRetryAttempts: 2
            FilterCriteria:
              Filters:
                - Pattern: '{"eventName": ["INSERT"], "dynamodb": {"NewImage": {"log_seq": {"N": [{"exists": true}]}}}}'
"""


def item(sk: str, seq: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"pk": {"S": "mem:alice"}, "sk": {"S": sk}}
    if seq is not None:
        out["log_seq"] = {"N": str(seq)}
    return out


class Consumer:
    """The trigger's function: records each batch; `answers` say what to answer (or raise) in turn."""

    def __init__(self, answers: list[Any] | None = None) -> None:
        self.batches: list[list[dict[str, Any]]] = []
        self.answers = list(answers or [])
        self.lock = threading.Lock()

    def __call__(self, function: str, event: dict[str, Any]) -> Any:
        assert function == "ConsumerFunction"
        with self.lock:
            self.batches.append(event["Records"])
            answer = self.answers.pop(0) if self.answers else None
        if isinstance(answer, Exception):
            raise answer
        return answer

    def sks(self) -> list[str]:
        return [r["dynamodb"]["Keys"]["sk"]["S"] for batch in self.batches for r in batch]


def make_tables(ddb: Any, tpl: Any) -> None:
    for name, props in tpl.tables.items():
        ddb.create_table(
            TableName=name,
            AttributeDefinitions=props["AttributeDefinitions"],
            KeySchema=props["KeySchema"],
            BillingMode="PAY_PER_REQUEST",
        )


@pytest.fixture
def tpl(tmp_path: Path) -> Any:
    path = tmp_path / "template.yaml"
    path.write_text(TEMPLATE, encoding="utf-8")
    return parse(path)


def test_the_template_names_the_stream_its_trigger_and_how_lambda_polls_it(tpl: Any) -> None:
    (source,) = tpl.streams
    assert (source.function, source.table, source.batch_size, source.retries) == (
        "ConsumerFunction",
        "Table",
        3,
        2,
    )
    assert source.filters == (
        {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"log_seq": {"N": [{"exists": True}]}}}},
    )


def test_committed_puts_become_records_in_order_and_a_cancelled_transaction_none(
    tmp_path: Path, tpl: Any
) -> None:
    # Given moto's server with the tap, the journal and the stream of `Table`
    journal = Journal(tmp_path / "journal.jsonl")
    acks = Acks(tmp_path / "acks.json")
    consumer = Consumer()
    streams = LocalStreams(tpl, consumer, acks, backoff=0.01)
    tap = MotoTap()
    tap.attach(journal, None, streams)
    streams.start()
    try:
        with moto_server(tap) as endpoint:
            ddb = client("dynamodb", endpoint)
            make_tables(ddb, tpl)
            # When entries are put by PutItem, a transaction and a batch, beside items the filter drops
            ddb.put_item(TableName="Table", Item=item("chg:1", 1))
            ddb.put_item(TableName="Table", Item=item("nug:a"))
            version = {"TableName": "Table", "Key": item("ver"), "UpdateExpression": "SET s = :s"}
            version["ExpressionAttributeValues"] = {":s": {"N": "2"}}
            ddb.transact_write_items(
                TransactItems=[{"Put": {"TableName": "Table", "Item": item("chg:2", 2)}}, {"Update": version}]
            )
            ddb.batch_write_item(RequestItems={"Table": [{"PutRequest": {"Item": item("chg:3", 3)}}]})
            ddb.put_item(TableName="Other", Item={"pk": {"S": "x"}, "log_seq": {"N": "9"}})
            # and a transaction whose condition fails (nothing of it is written)
            check = {
                "TableName": "Table",
                "Key": item("ver"),
                "ConditionExpression": "attribute_not_exists(sk)",
            }
            with pytest.raises(ClientError):
                ddb.transact_write_items(
                    TransactItems=[
                        {"Put": {"TableName": "Table", "Item": item("chg:4", 4)}},
                        {"ConditionCheck": check},
                    ]
                )
            ddb.put_item(TableName="Table", Item=item("chg:5", 5))
            assert streams.drain(timeout=10)
    finally:
        streams.stop()
        journal.close()
    # Then the trigger got the committed entries only, in commit order, as INSERT records with the image
    assert consumer.sks() == ["chg:1", "chg:2", "chg:3", "chg:5"]
    first = consumer.batches[0][0]
    assert first["eventName"] == "INSERT" and first["eventSource"] == "aws:dynamodb"
    assert first["dynamodb"]["NewImage"] == item("chg:1", 1)
    assert first["dynamodb"]["Keys"] == item("chg:1")
    assert [int(r["dynamodb"]["SequenceNumber"]) for b in consumer.batches for r in b] == [1, 2, 3, 4]
    # and each record is in the journal beside the write it came from, acknowledged once delivered
    ops = [op for op, _ in journal.records()]
    assert ops.count(STREAM_OP) == 4
    assert ops.index(STREAM_OP) == ops.index("PutItem") + 1
    assert acks.get("stream:ConsumerFunction.Stream") == 4


def source(batch_size: int = 3, retries: int = 5) -> StreamSourceDef:
    return StreamSourceDef("C.Stream", "ConsumerFunction", "Table", batch_size, (), retries, -1)


def record(seq: int) -> dict[str, Any]:
    return {"eventName": "INSERT", "dynamodb": {"Keys": item(f"chg:{seq}"), "SequenceNumber": f"{seq:021d}"}}


def run(poller: StreamPoller, count: int) -> None:
    for seq in range(1, count + 1):
        poller.put(seq, record(seq))
    poller.start()
    try:
        assert poller.drain(timeout=10)
    finally:
        poller.stop()


def test_a_partial_failure_is_retried_from_the_lowest_failed_record(tmp_path: Path) -> None:
    # Given a function that reports records 2 and 3 of its first batch as failed, then succeeds
    acks = Acks(tmp_path / "acks.json")
    failed = {"batchItemFailures": [{"itemIdentifier": f"{3:021d}"}, {"itemIdentifier": f"{2:021d}"}]}
    consumer = Consumer([failed])
    poller = StreamPoller(source(), consumer, acks.ack, backoff=0.001)
    # When five records are delivered
    run(poller, 5)
    # Then the batch is retried from record 2 (the checkpoint), and nothing is skipped or reordered
    assert consumer.sks() == ["chg:1", "chg:2", "chg:3", "chg:2", "chg:3", "chg:4", "chg:5"]
    assert acks.get("stream:C.Stream") == 5


def test_a_batch_that_raises_is_retried_whole_and_an_unreadable_answer_is_a_failure(tmp_path: Path) -> None:
    acks = Acks(tmp_path / "acks.json")
    consumer = Consumer([RuntimeError("down"), {"batchItemFailures": [{"itemIdentifier": ""}]}])
    poller = StreamPoller(source(batch_size=10), consumer, acks.ack, backoff=0.001)
    run(poller, 2)
    assert consumer.sks() == ["chg:1", "chg:2"] * 3


def test_after_the_retries_the_failing_record_is_dropped_and_the_rest_goes_on(tmp_path: Path) -> None:
    acks = Acks(tmp_path / "acks.json")
    failing = {"batchItemFailures": [{"itemIdentifier": f"{1:021d}"}]}
    consumer = Consumer([failing] * 3)  # the first attempt and the two retries
    poller = StreamPoller(source(retries=2), consumer, acks.ack, backoff=0.001)
    run(poller, 2)
    assert consumer.sks() == ["chg:1", "chg:2"] * 3 + ["chg:2"]
    assert poller.dropped == 1 and acks.get("stream:C.Stream") == 2


def test_records_not_acknowledged_are_carried_over_and_delivered_after_a_restart(
    tmp_path: Path, tpl: Any
) -> None:
    # Given a journal with four stream records and two bus events, of which the consumers acknowledged
    # the first stream record and the first event (then the server was killed)
    journal = Journal(tmp_path / "journal.jsonl")
    name = "ConsumerFunction.Stream"
    for seq in range(1, 5):
        write = ("PutItem", {"TableName": "Table", "Item": item(f"chg:{seq}", seq)})
        journal.append_many([write, (STREAM_OP, {"source": name, "seq": seq, "record": record(seq)})])
    for seq in (1, 2):
        journal.append(
            EVENT_OP, {"seq": seq, "entry": {"Source": "s", "EventBusName": "B"}, "event_id": f"e{seq}"}
        )
    journal.close()
    acks = Acks(tmp_path / "acks.json")
    acks.ack(f"stream:{name}", 1)
    acks.ack("bus", 1)
    # When the journal is read at start
    queued: list[tuple[str, dict[str, Any]]] = []
    with moto_server() as endpoint:
        raw = client("dynamodb", endpoint)
        make_tables(raw, tpl)
        assert Journal(tmp_path / "journal.jsonl").replay(raw, queued) == (4, 0)
        pending = undelivered(queued, Acks(tmp_path / "acks.json"))
        # Then the records and events past the acknowledged positions are pending, in journal order
        assert [(op, p["seq"]) for op, p in pending] == [
            (STREAM_OP, 2),
            (STREAM_OP, 3),
            (STREAM_OP, 4),
            (EVENT_OP, 2),
        ]
        # and the compacted journal keeps them after the items
        compacted = Journal(tmp_path / "journal.jsonl")
        compacted.compact(raw, ["Table"], carry=pending)
        compacted.close()
    carried = [(op, p.get("seq")) for op, p in compacted.records() if op.startswith("@")]
    assert carried == [(STREAM_OP, 2), (STREAM_OP, 3), (STREAM_OP, 4), (EVENT_OP, 2)]
    # And the stream delivers them first, then numbers new records after them
    consumer = Consumer()
    streams = LocalStreams(tpl, consumer, Acks(tmp_path / "acks.json"), backoff=0.001)
    assert streams.restore(pending) == 3
    later = streams.records_of("PutItem", {"TableName": "Table", "Item": item("chg:5", 5)})
    assert [p["seq"] for _, p in later] == [5]
    streams.accept(later)
    streams.start()
    try:
        assert streams.drain(timeout=10)
    finally:
        streams.stop()
    assert consumer.sks() == ["chg:2", "chg:3", "chg:4", "chg:5"]


def test_an_event_is_acknowledged_once_every_rule_has_had_it_in_order() -> None:
    # Given two rules on one bus, one matching everything from `s`, one only detail-type A
    rules = [
        RuleDef("r1", "One", "B", {"source": ["s"]}, retries=0),
        RuleDef("r2", "Two", "B", {"detail-type": ["A"]}, retries=0),
    ]
    done: list[int] = []
    calls: list[tuple[str, str]] = []
    dispatcher = EventDispatcher(
        rules, lambda fn, ev: calls.append((fn, ev["id"])), backoff=0, on_done=done.append
    )
    dispatcher.start()
    try:
        # When three events are published: one for both rules, one for one, one for none
        dispatcher.publish({"Source": "s", "DetailType": "A", "EventBusName": "B"}, "e1", 1)
        dispatcher.publish({"Source": "s", "DetailType": "X", "EventBusName": "B"}, "e2", 2)
        dispatcher.publish({"Source": "t", "DetailType": "X", "EventBusName": "B"}, "e3", 3)
        assert dispatcher.drain(timeout=10)
    finally:
        dispatcher.stop()
    # Then each is acknowledged after its last delivery, in order (the unmatched one too)
    assert calls == [("One", "e1"), ("Two", "e1"), ("One", "e2")]
    assert done == [1, 2, 3]
