"""EventBridge publisher on MemoryBus: SessionSummaryDue, SnapshotDue, ExportRequested, and the change
events (`put`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import BotoCoreError, ClientError

from synapse.aws import clients as aws
from synapse.core.config import settings
from synapse.core.errors import UpstreamUnavailable
from synapse.core.state import per_container

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient

SOURCE = "synapse.memory"
SUMMARY_DUE = "SessionSummaryDue"
SNAPSHOT_DUE = "SnapshotDue"
EXPORT_REQUESTED = "ExportRequested"


@per_container
def client() -> EventBridgeClient:
    return cast("EventBridgeClient", aws.client("events"))


def summary_boundaries(before: int, after: int, every: int) -> list[int]:
    """Every multiple of `every` the session's count passed going from `before` to `after`."""
    return list(range((before // every + 1) * every, after + 1, every))


def publish_summaries_due(user_id: str, session_id: str, counts: list[int], mind_id: str = "default") -> None:
    """One SessionSummaryDue per boundary (the summarizer makes each chunk once, whatever repeats)."""
    if not counts:
        return
    entries = [
        {
            "Source": SOURCE,
            "DetailType": SUMMARY_DUE,
            "Detail": json.dumps(
                {"userId": user_id, "sessionId": session_id, "msgCount": count, "mindId": mind_id}
            ),
            "EventBusName": settings().event_bus,
        }
        for count in counts
    ]
    try:
        for start in range(0, len(entries), 10):  # PutEvents takes 10 entries a call
            answer = client().put_events(Entries=entries[start : start + 10])  # type: ignore[arg-type]
            if answer.get("FailedEntryCount"):
                raise UpstreamUnavailable("The event bus refused an event; try again shortly.", retry_after=2)
    except (ClientError, BotoCoreError) as exc:
        raise UpstreamUnavailable("The event bus is unavailable; try again shortly.", retry_after=2) from exc


def _put_one(detail_type: str, detail: Mapping[str, Any]) -> None:
    entry = {
        "Source": SOURCE,
        "DetailType": detail_type,
        "Detail": json.dumps(detail),
        "EventBusName": settings().event_bus,
    }
    try:
        answer = client().put_events(Entries=[entry])  # type: ignore[list-item]
    except (ClientError, BotoCoreError) as exc:
        raise UpstreamUnavailable("The event bus is unavailable; try again shortly.", retry_after=2) from exc
    if answer.get("FailedEntryCount"):
        raise UpstreamUnavailable("The event bus refused an event; try again shortly.", retry_after=2)


def publish_snapshot_due(user_id: str, mind_id: str, epoch: str, seq: int, model_key: str | None) -> None:
    """SnapshotDue: a reader found the mind's snapshot missing or behind (the writer, functions/
    snapshot_writer, packs the mind as it is then). UpstreamUnavailable if the bus refuses it."""
    detail = {"userId": user_id, "mindId": mind_id, "epoch": epoch, "seq": seq, "modelKey": model_key}
    _put_one(SNAPSHOT_DUE, detail)


def publish_export_requested(user_id: str, export_id: str) -> None:
    """ExportRequested: a user asked for an export file (functions/export_writer writes it).
    UpstreamUnavailable if the bus refuses it."""
    _put_one(EXPORT_REQUESTED, {"userId": user_id, "exportId": export_id})


PUT_EVENTS_MAX = 10  # entries in one PutEvents call


def put(events: Sequence[tuple[str, Mapping[str, Any], datetime]]) -> list[bool]:
    """One PutEvents call of at most 10 events (detail-type, detail, time) on MemoryBus, source
    `synapse.memory`: whether each was accepted. An AWS error accepts none (the caller retries).
    EventBridge does not keep the order of one call's entries: receivers order by the detail's seq."""
    if len(events) > PUT_EVENTS_MAX:
        raise ValueError(f"PutEvents takes at most {PUT_EVENTS_MAX} entries")
    if not events:
        return []
    entries = [
        {
            "Source": SOURCE,
            "DetailType": kind,
            "Detail": json.dumps(detail, separators=(",", ":")),
            "Time": when,
            "EventBusName": settings().event_bus,
        }
        for kind, detail, when in events
    ]
    try:
        answer = client().put_events(Entries=entries)  # type: ignore[arg-type]
    except (ClientError, BotoCoreError):
        return [False] * len(events)
    results = answer.get("Entries") or []
    if len(results) != len(events):
        return [False] * len(events)
    return [bool(r.get("EventId")) and not r.get("ErrorCode") for r in results]
