"""EventBridge delivered by the local run: pattern matching and delivery with retries."""

from __future__ import annotations

import json
import threading

import pytest

from local.events import EventDispatcher, bus_name, matches, to_event
from local.journal import MotoTap
from local.template import RuleDef
from tests.unit.local_moto import client, moto_server

EVENT = {
    "source": "synapse.memory",
    "detail-type": "SessionSummaryDue",
    "detail": {"userId": "alice", "msgCount": 15, "tags": ["a", "b"]},
}


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ({"source": ["synapse.memory"]}, True),
        ({"source": ["other"]}, False),
        ({"source": ["other", "synapse.memory"], "detail-type": ["SessionSummaryDue"]}, True),
        ({"detail-type": ["SessionSummaryDue"], "source": ["x"]}, False),
        ({"detail": {"userId": ["alice"]}}, True),
        ({"detail": {"userId": ["bob"]}}, False),
        ({"detail": {"tags": ["b"]}}, True),
        ({"detail": {"missing": [{"exists": False}]}}, True),
        ({"detail": {"userId": [{"exists": False}]}}, False),
        ({"source": [{"prefix": "synapse."}]}, True),
        ({"source": [{"anything-but": ["synapse.memory"]}]}, False),
        ({"detail": {"msgCount": [{"numeric": [">=", 15, "<", 30]}]}}, True),
        ({"detail": {"msgCount": [{"numeric": [">", 15]}]}}, False),
        ({"nope": ["x"]}, False),
    ],
)
def test_patterns_match_like_eventbridge(pattern: dict, expected: bool) -> None:
    assert matches(pattern, EVENT) is expected


def test_entries_become_target_events() -> None:
    entry = {"Source": "s", "DetailType": "T", "Detail": json.dumps({"a": 1}), "Time": 1_700_000_000}
    event = to_event(entry, "id-1")
    assert event == {
        "version": "0",
        "id": "id-1",
        "detail-type": "T",
        "source": "s",
        "account": "123456789012",
        "time": "2023-11-14T22:13:20Z",
        "region": "us-east-1",
        "resources": [],
        "detail": {"a": 1},
    }
    assert bus_name(None) == "default"
    assert bus_name("arn:aws:events:us-east-1:123456789012:event-bus/MemoryBus") == "MemoryBus"


RULE = RuleDef("r", "Consumer", "MemoryBus", {"source": ["synapse.memory"]}, retries=2)


def test_put_events_through_motos_server_reach_the_target_with_retries() -> None:
    # Given a dispatcher fed by moto's server (the tap), and a target that fails once
    calls: list[dict] = []
    done = threading.Event()

    def invoke(name: str, event: dict) -> None:
        calls.append(event)
        if len(calls) == 1:
            raise RuntimeError("first attempt fails")
        assert name == "Consumer"
        done.set()

    dispatcher = EventDispatcher([RULE], invoke, backoff=0.01)
    dispatcher.start()
    try:
        tap = MotoTap()
        tap.attach(None, dispatcher.publish)
        with moto_server(tap) as endpoint:
            events = client("events", endpoint)
            events.create_event_bus(Name="MemoryBus")
            # When the code publishes one matching and one non-matching entry
            events.put_events(
                Entries=[
                    {
                        "Source": "synapse.memory",
                        "DetailType": "D",
                        "Detail": '{"x": 1}',
                        "EventBusName": "MemoryBus",
                    },
                    {"Source": "other", "DetailType": "D", "Detail": "{}", "EventBusName": "MemoryBus"},
                    {
                        "Source": "synapse.memory",
                        "DetailType": "D",
                        "Detail": "{}",
                        "EventBusName": "default",
                    },
                ]
            )
            # Then the matching entry is delivered once, after one retry
            assert dispatcher.drain(timeout=10)
    finally:
        dispatcher.stop()
    assert done.is_set()
    assert len(calls) == 2
    assert calls[1]["detail"] == {"x": 1}
    assert calls[0]["id"] == calls[1]["id"]
    assert (dispatcher.delivered, dispatcher.failed) == (1, 0)


def test_a_target_that_always_fails_is_dropped_after_the_retries() -> None:
    attempts: list[int] = []

    def invoke(name: str, event: dict) -> None:
        attempts.append(1)
        raise RuntimeError("down")

    dispatcher = EventDispatcher([RULE], invoke, backoff=0.001)
    dispatcher.start()
    try:
        assert dispatcher.publish({"Source": "synapse.memory", "EventBusName": "MemoryBus"}, "e1") == 1
        assert dispatcher.drain(timeout=10)
    finally:
        dispatcher.stop()
    assert len(attempts) == 3
    assert dispatcher.failed == 1
