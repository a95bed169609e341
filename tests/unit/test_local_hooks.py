"""The local run's tap at moto's server sees every client's writes and events, and never raw_client's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest

from local.aws import raw_client
from local.journal import Journal, MotoTap
from synapse.aws import clients as aws
from synapse.core import state
from tests.unit.local_moto import moto_server

TABLE = "HooksTable"


def test_service_and_boto3_clients_are_journaled_raw_clients_are_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = Journal(tmp_path / "journal.jsonl")
    published: list[dict[str, Any]] = []
    tap = MotoTap()
    tap.attach(journal, lambda entry, event_id, seq: published.append(entry))
    with moto_server(tap) as endpoint:
        # Given the service's own client, a boto3 session's client and a raw client (as a replay uses)
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
        state.reset()
        raw = raw_client("dynamodb", endpoint=endpoint)
        raw.create_table(
            TableName=TABLE,
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
        raw_client("events", endpoint=endpoint).create_event_bus(Name="Bus")
        clients = {
            "service": (aws.client("dynamodb"), aws.client("events")),
            "boto3": (boto3.session.Session().client("dynamodb"), boto3.session.Session().client("events")),
            "raw": (raw, raw_client("events", endpoint=endpoint)),
        }
        # When each writes an item and publishes an event
        for who, (ddb, events) in clients.items():
            ddb.put_item(TableName=TABLE, Item={"pk": {"S": who}})
            events.put_events(
                Entries=[{"Source": who, "DetailType": "D", "Detail": "{}", "EventBusName": "Bus"}]
            )
        # Then all three writes are in moto
        items = raw.scan(TableName=TABLE)["Items"]
        assert sorted(i["pk"]["S"] for i in items) == ["boto3", "raw", "service"]
    state.reset()
    journal.close()
    # but only the first two were journaled and handed to the local EventBridge
    writes = [params for op, params in journal.records() if op == "PutItem"]
    assert [params["Item"]["pk"]["S"] for params in writes] == ["service", "boto3"]
    assert [e["Source"] for e in published] == ["service", "boto3"]
    # and the events were journaled too, numbered in the bus's queue, before PutEvents answered
    kept = [params for op, params in journal.records() if op == "@event"]
    assert [(p["seq"], p["entry"]["Source"]) for p in kept] == [(1, "service"), (2, "boto3")]
