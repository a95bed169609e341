"""A mind's changes, outward: one event per change on MemoryBus, from the change-log entries the
table's stream carries (`publish`, the change-events function), and the pull feed (`feed`,
GET /memory/changes). Both read the entry each write commits in its own transaction
(store/changelog.py): a write that did not commit has no entry, so it has no event and no feed row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from synapse.aws import events
from synapse.core.models.changes import MemoryChange, MemoryChanges
from synapse.core.observability import logger
from synapse.store import changelog
from synapse.store.changelog import Change, Entry
from synapse.store.keys import Space
from synapse.store.minds import Mind

# a memory's change whose word has an event type of its own; any other word (accepted, consolidated,
# and those to come) is memory.created for a first version and memory.updated after
OWN_TYPE = frozenset({"created", "updated", "deleted", "verified", "restored", "superseded"})

Event = tuple[str, dict[str, Any], datetime]  # (detail-type, detail, time)


def detail_type(change: Change) -> str:
    if not change.of_memory:
        return change.kind  # summary.created, mind.deleted, proposal.created
    if change.kind in OWN_TYPE:
        return f"memory.{change.kind}"
    return "memory.created" if change.version == 1 else "memory.updated"


def events_of(space: Space, entry: Entry) -> list[Event]:
    """The events of one log entry, in the entry's order (API.md: `detail` is userId, mindId, seq and
    what the change names; the event's time is when the write committed)."""
    out: list[Event] = []
    for change in entry.changes:
        detail: dict[str, Any] = {"userId": space.user_id, "mindId": space.mind_id, "seq": entry.seq}
        if change.of_memory:
            detail.update(memoryId=change.memory_id, version=change.version, change=change.kind)
        else:
            named = {
                "memoryId": change.memory_id,
                "proposalId": change.proposal_id,
                "sessionId": change.session_id,
                "chunkId": change.chunk_id,
            }
            detail.update({k: v for k, v in named.items() if v is not None})
        out.append((detail_type(change), detail, entry.at))
    return out


@dataclass(frozen=True)
class StreamRecord:
    """A stream record of a new log entry: its position in the stream, its Keys and NewImage (raw)."""

    sequence_number: str
    keys: Mapping[str, Any]
    image: Mapping[str, Any]


def publish(records: Sequence[StreamRecord]) -> list[str]:
    """Put the events of a batch of stream records on MemoryBus; returns the sequence numbers of the
    first record whose events were not all put and of every record after it (empty: all done).

    Events go in the mind's seq order, 10 to a PutEvents call, and stop at the first call with a
    refused event: Lambda retries the batch from the lowest sequence number returned, so what follows
    a failure is never put before it (events already put may be put again: at least once). A record
    that is not a log entry is logged and skipped: it must not hold up the stream."""
    decoded: list[tuple[str, str, int, int, list[Event]]] = []
    for index, record in enumerate(records):
        try:
            space, entry = changelog.from_stream(record.keys, record.image)
        except (KeyError, ValueError, TypeError):
            logger.error(
                "skipped a stream record that is not a change-log entry",
                extra={"seq_no": record.sequence_number},
            )
            continue
        decoded.append((space.pk, space.mind_id, entry.seq, index, events_of(space, entry)))
    decoded.sort(key=lambda d: d[:4])  # the stream's order already, per mind by seq
    pending = [(index, event) for *_, index, evs in decoded for event in evs]
    for start in range(0, len(pending), events.PUT_EVENTS_MAX):
        call = pending[start : start + events.PUT_EVENTS_MAX]
        accepted = events.put([event for _, event in call])
        if not all(accepted):
            not_put = {index for (index, _), ok in zip(call, accepted, strict=True) if not ok}
            not_put |= {index for index, _ in pending[start + events.PUT_EVENTS_MAX :]}
            first = min(not_put)  # the checkpoint: this record, and every one after it in the stream
            logger.warning(
                "the event bus refused change events; the stream retries them",
                extra={"records": len(records), "retried": len(records) - first},
            )
            return [r.sequence_number for r in records[first:]]
    logger.info("change events put", extra={"records": len(records), "events": len(pending)})
    return []


def feed(mind: Mind, after: int, limit: int) -> MemoryChanges:
    """GET /memory/changes: the mind's memory changes after `after`, oldest first (410 past what the
    log keeps). Summaries and the mind's deletion are events only: they have no row here, though
    `next_after` moves past their positions."""
    page = changelog.after(mind.space, after, limit)
    rows = [
        MemoryChange(seq=e.seq, at=e.at, memory_id=c.memory_id or "", change=c.kind, version=c.version or 0)
        for e in page.entries
        for c in e.memory_changes()
    ]
    return MemoryChanges(changes=rows, next_after=page.next_after)
