"""EventBridge, delivered by us: PutEvents entries matched against the template's rules.

moto's PutEvents answers 500 when a rule targets a Lambda function, so no rule is created in moto.
moto's server hands every entry a PutEvents accepted to `EventDispatcher.publish` (local.journal's
MotoTap, whichever process published it), which matches it against the template's EventBridgeRule
patterns and queues it for its target function; a background thread runs the target (through the
functions' pools, like any invocation) with the rule's retries. An entry the tap journaled carries
its position in the bus queue: once every rule's delivery of it is over (done, or dropped after the
retries) the position is acknowledged (`on_done`), so a restart delivers again only what was not.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from local.apigw import ACCOUNT_ID, REGION
from local.functions import reason
from local.template import RuleDef

log = logging.getLogger("local.events")

_MISSING = object()


# --- pattern matching ------------------------------------------------------------------------------


def _match_value(rule: Any, value: Any) -> bool:
    """One element of a pattern's list against one value (the event's value may be absent)."""
    if isinstance(rule, dict):
        if "exists" in rule:
            return bool(rule["exists"]) == (value is not _MISSING)
        if value is _MISSING:
            return False
        if "prefix" in rule:
            return isinstance(value, str) and value.startswith(str(rule["prefix"]))
        if "suffix" in rule:
            return isinstance(value, str) and value.endswith(str(rule["suffix"]))
        if "equals-ignore-case" in rule:
            return isinstance(value, str) and value.lower() == str(rule["equals-ignore-case"]).lower()
        if "anything-but" in rule:
            banned = rule["anything-but"]
            banned = banned if isinstance(banned, list) else [banned]
            return value not in banned
        if "numeric" in rule:
            return _numeric(rule["numeric"], value)
        return False
    if value is _MISSING:
        return False
    return bool(rule == value)


def _numeric(conds: list[Any], value: Any) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    ops: dict[str, Callable[[float, float], bool]] = {
        "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b,
        "=": lambda a, b: a == b,
        ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b,
    }
    for i in range(0, len(conds) - 1, 2):
        fn = ops.get(str(conds[i]))
        if fn is None or not fn(float(value), float(conds[i + 1])):
            return False
    return True


def matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    """EventBridge pattern semantics: every key must match; a list matches if any element does;
    an array value in the event matches if any of its elements does."""
    for key, rule in pattern.items():
        value = event.get(key, _MISSING) if isinstance(event, dict) else _MISSING
        if isinstance(rule, dict):
            if not isinstance(value, dict) or not matches(rule, value):
                return False
            continue
        alternatives = rule if isinstance(rule, list) else [rule]
        values = value if isinstance(value, list) else [value]
        if not any(_match_value(alt, v) for alt in alternatives for v in values):
            return False
    return True


def bus_name(value: str | None) -> str:
    if not value:
        return "default"
    return value.rsplit("/", 1)[-1] if value.startswith("arn:") else value


def to_event(entry: dict[str, Any], event_id: str) -> dict[str, Any]:
    """A PutEvents entry → the event a rule's target receives."""
    when = entry.get("Time")
    if isinstance(when, (int, float)):
        stamp = datetime.fromtimestamp(when, UTC)
    elif isinstance(when, datetime):
        stamp = when.astimezone(UTC)
    else:
        stamp = datetime.now(UTC)
    detail_raw = entry.get("Detail") or "{}"
    try:
        detail = json.loads(detail_raw) if isinstance(detail_raw, str) else detail_raw
    except ValueError:
        detail = {}
    return {
        "version": "0",
        "id": event_id,
        "detail-type": entry.get("DetailType", ""),
        "source": entry.get("Source", ""),
        "account": ACCOUNT_ID,
        "time": stamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": list(entry.get("Resources") or []),
        "detail": detail,
    }


# --- delivery --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Delivery:
    rule: RuleDef | None  # None: no rule matched (only its position is to be acknowledged)
    event: dict[str, Any]
    seq: int | None = None  # on the event's last delivery: its position in the bus queue


class EventDispatcher:
    """Matches PutEvents entries and runs the rules' targets on a background thread."""

    def __init__(
        self,
        rules: list[RuleDef],
        invoke: Callable[[str, dict[str, Any]], Any],
        backoff: float = 0.5,
        on_done: Callable[[int], None] | None = None,
    ) -> None:
        self.rules = rules
        self.invoke = invoke
        self.backoff = backoff
        self.on_done = on_done
        self._queue: queue.Queue[Delivery | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self.delivered = 0
        self.failed = 0

    def publish(self, entry: dict[str, Any], event_id: str, seq: int | None = None) -> int:
        """Queue one accepted entry for every matching rule (one thread delivers them in order, so
        an event's last delivery acknowledges `seq`). Returns how many rules matched."""
        event = to_event(entry, event_id)
        bus = bus_name(entry.get("EventBusName"))
        rules = [r for r in self.rules if r.bus == bus and matches(r.pattern, event)]
        for i, rule in enumerate(rules):
            self._queue.put(Delivery(rule, event, seq if i == len(rules) - 1 else None))
        if not rules and seq is not None:
            self._queue.put(Delivery(None, event, seq))
        return len(rules)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="eventbridge", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=timeout)
            self._thread = None

    def drain(self, timeout: float = 30.0) -> bool:
        """Wait until every queued event has been handled (tests use this)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                if item.rule is not None:
                    self._deliver(item, item.rule)
                if item.seq is not None and self.on_done is not None:
                    self.on_done(item.seq)
            finally:
                self._queue.task_done()

    def _deliver(self, item: Delivery, rule: RuleDef) -> None:
        for attempt in range(rule.retries + 1):
            try:
                self.invoke(rule.function, item.event)
                self.delivered += 1
                return
            except Exception as exc:  # noqa: BLE001 - like EventBridge: retry, then give up and log
                log.warning(
                    "event %s (%s) to %s failed on attempt %d: %s",
                    item.event["id"],
                    item.event["detail-type"],
                    rule.function,
                    attempt + 1,
                    reason(exc),
                )
                time.sleep(self.backoff * (2**attempt))
        self.failed += 1
        log.error("event %s to %s dropped after retries", item.event["id"], rule.function)
