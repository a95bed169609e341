"""Durability for moto's in-memory DynamoDB: a journal of every acknowledged write.

The journal is kept at moto's server itself (`MotoTap`): the server answers one request at a time, and
the tap sees each successful write there, before its answer is sent, whichever process sent it (the
server, or a function's worker process). A write is appended as `{"op", "params"}` (the client's
parameters, binaries base64-tagged) and fsync'ed inside that one lock, so the journal's order is the
order moto applied the writes, and no write is acknowledged before it is on disk. At start the journal
is replayed into the fresh tables with `raw_client` (whose requests the tap leaves alone), then
compacted into one PutItem per item (written beside it, fsync'ed, renamed over it).

The journal also holds the local run's queues, so that what AWS would keep durably survives a kill -9
too: each record of the emulated DynamoDB stream (`@stream`, local/streams.py) is appended with the
write it comes from, in the same fsync, and each entry PutEvents accepted (`@event`) before PutEvents
answers. Their consumers acknowledge positions in `acks.json` (`Acks`); at start the records past
those positions are delivered again (at least once) and carried over into the compacted journal.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

import botocore.session
from botocore import xform_name
from botocore.exceptions import ClientError
from botocore.model import Shape

log = logging.getLogger("local.journal")

WRITE_OPS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
_B64 = "__b64__"


# --- values ----------------------------------------------------------------------------------------


def encode(value: Any) -> Any:
    """Params → JSON-safe: bytes become {"__b64__": "..."}."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {_B64: base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [encode(v) for v in value]
    return value


def decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {_B64}:
            return base64.b64decode(value[_B64])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def from_wire(shape: Shape | None, value: Any) -> Any:
    """A JSON-protocol request body → client params (blobs back to bytes), guided by the model."""
    if shape is None or value is None:
        return value
    kind = shape.type_name
    if kind == "structure" and isinstance(value, dict):
        members = shape.members  # type: ignore[attr-defined]
        return {k: from_wire(members.get(k), v) for k, v in value.items()}
    if kind == "list" and isinstance(value, list):
        return [from_wire(shape.member, v) for v in value]  # type: ignore[attr-defined]
    if kind == "map" and isinstance(value, dict):
        return {k: from_wire(shape.value, v) for k, v in value.items()}  # type: ignore[attr-defined]
    if kind == "blob" and isinstance(value, str):
        return base64.b64decode(value)
    return value


def processed_batch(params: dict[str, Any], unprocessed: dict[str, Any] | None) -> dict[str, Any] | None:
    """BatchWriteItem params minus the requests DynamoDB handed back as unprocessed."""
    if not unprocessed:
        return params
    items: dict[str, list[Any]] = {}
    for table, requests in params.get("RequestItems", {}).items():
        left = list(unprocessed.get(table, []))
        kept = []
        for req in requests:
            if req in left:
                left.remove(req)
            else:
                kept.append(req)
        if kept:
            items[table] = kept
    return {**params, "RequestItems": items} if items else None


# --- the journal file ------------------------------------------------------------------------------


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._fh: Any = None
        self.appended = 0

    def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("ab")

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    def append(self, op: str, params: dict[str, Any]) -> None:
        self.append_many([(op, params)])

    def append_many(self, records: list[tuple[str, dict[str, Any]]]) -> None:
        """Append records together, with one fsync (a write and the stream records it makes)."""
        if not records:
            return
        lines = b"".join(
            json.dumps({"op": op, "params": encode(params)}, separators=(",", ":")).encode() + b"\n"
            for op, params in records
        )
        with self._lock:
            if self._fh is None:
                self.open()
            self._fh.write(lines)
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self.appended += len(records)

    def records(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every complete record; a torn last line (a crash mid-write) is skipped."""
        if not self.path.exists():
            return
        with self.path.open("rb") as fh:
            for number, raw in enumerate(fh, 1):
                if not raw.strip():
                    continue
                try:
                    rec = json.loads(raw)
                except ValueError:
                    log.warning("journal line %d is torn; skipped", number)
                    continue
                yield str(rec["op"]), decode(rec["params"])

    def replay(self, client: Any, queued: list[tuple[str, dict[str, Any]]] | None = None) -> tuple[int, int]:
        """Apply every write through `client` (which must not be hooked); queue records (`@...`) are
        not writes: they go to `queued`, in order. Returns (applied, failed)."""
        applied = failed = 0
        for op, params in self.records():
            if op.startswith(QUEUE_PREFIX):
                if queued is not None:
                    queued.append((op, params))
                continue
            try:
                getattr(client, xform_name(op))(**params)
                applied += 1
            except ClientError as exc:
                failed += 1
                log.warning("journal replay: %s failed (%s)", op, exc.response.get("Error", {}).get("Code"))
        return applied, failed

    def compact(
        self, client: Any, tables: Iterable[str], carry: Iterable[tuple[str, dict[str, Any]]] = ()
    ) -> int:
        """Rewrite the journal as one PutItem per live item, then the queue records still undelivered
        (`carry`): temp file, fsync, atomic rename."""
        tmp = self.path.with_suffix(".jsonl.tmp")
        count = 0
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
            with tmp.open("wb") as out:
                for table in tables:
                    for page in client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
                        for item in page.get("Items", []):
                            params = {"TableName": table, "Item": item}
                            rec = {"op": "PutItem", "params": encode(params)}
                            out.write(json.dumps(rec, separators=(",", ":")).encode() + b"\n")
                            count += 1
                for op, params in carry:
                    rec = {"op": op, "params": encode(params)}
                    out.write(json.dumps(rec, separators=(",", ":")).encode() + b"\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
            _fsync_dir(self.path.parent)
            self._fh = self.path.open("ab")
        return count


class Acks:
    """Where each consumer of a journaled queue stands (`{queue: last position handled}`), in
    DATA_DIR/acks.json. Written after each delivery (a temp file renamed over it, no fsync: a lost
    acknowledgement only delivers again, and the queues are at least once)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.positions: dict[str, int] = {}
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            self.positions = {str(k): int(v) for k, v in raw.items()}
        except (OSError, ValueError, AttributeError, TypeError):
            self.positions = {}

    def get(self, queue: str) -> int:
        return self.positions.get(queue, 0)

    def ack(self, queue: str, position: int) -> None:
        with self._lock:
            if position <= self.positions.get(queue, 0):
                return
            self.positions[queue] = position
            tmp = self.path.with_name(self.path.name + ".tmp")
            tmp.write_text(json.dumps(self.positions), encoding="utf-8")
            os.replace(tmp, self.path)


def undelivered(queued: Iterable[tuple[str, dict[str, Any]]], acks: Acks) -> list[tuple[str, dict[str, Any]]]:
    """The queue records past their consumer's acknowledged position, in journal order."""
    return [(op, p) for op, p in queued if int(p["seq"]) > acks.get(queue_of(op, p))]


def queue_of(op: str, params: dict[str, Any]) -> str:
    """The queue a record belongs to: the bus, or one stream source."""
    return BUS_QUEUE if op == EVENT_OP else f"stream:{params['source']}"


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --- the tap at moto's server ----------------------------------------------------------------------

QUEUE_PREFIX = "@"  # a journal record that is not a write: a queue's
EVENT_OP = "@event"  # an entry PutEvents accepted: {"seq", "entry", "event_id"}
STREAM_OP = "@stream"  # a record of the emulated stream: {"source", "seq", "record"}
BUS_QUEUE = "bus"

DYNAMODB_TARGET = "DynamoDB_20120810."
PUT_EVENTS_TARGET = "AWSEvents.PutEvents"
# a request carrying this header is neither journaled nor delivered (local.aws.raw_client sets it)
UNJOURNALED_HEADER = "X-Synapse-Local-Unjournaled"


class JournalError(RuntimeError):
    """A write moto applied could not be journaled: it must not be acknowledged."""


class StreamSink(Protocol):
    """The emulated streams as the tap sees them (local/streams.py's LocalStreams)."""

    def records_of(self, op: str, wire: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]: ...

    def accept(self, records: list[tuple[str, dict[str, Any]]]) -> None: ...


class MotoTap:
    """Sees each request moto's server answers, inside the server's one lock, before the answer leaves.

    Every successful DynamoDB write (`WRITE_OPS`; of a BatchWriteItem, only the requests that were
    processed) is appended to the journal and fsync'ed there, so the journal's order is the order moto
    applied the writes, whichever process made them (the server, or any function's worker), and no
    write is acknowledged before it is on disk. Every entry PutEvents accepted goes to `publish`
    (the local EventBridge). Requests of `raw_client` (the journal's own replay) are left alone.
    """

    def __init__(self) -> None:
        self.journal: Journal | None = None
        self.publish: Callable[[dict[str, Any], str, int | None], Any] | None = None
        self.streams: StreamSink | None = None
        self.bus_seq = 0  # the last position given to an accepted event (the bus queue's)
        self._shapes: dict[str, Shape | None] = {}

    def attach(
        self,
        journal: Journal | None,
        publish: Callable[[dict[str, Any], str, int | None], Any] | None = None,
        streams: StreamSink | None = None,
    ) -> None:
        self.journal, self.publish, self.streams = journal, publish, streams

    def wants(self, target: str) -> bool:
        """Does this request's body need to be seen (decided from its X-Amz-Target alone)?"""
        if target.startswith(DYNAMODB_TARGET):
            return self.journal is not None and target[len(DYNAMODB_TARGET) :] in WRITE_OPS
        return target == PUT_EVENTS_TARGET and self.publish is not None

    def observe(self, target: str, request: bytes, status: int, response: bytes) -> None:
        """Called with moto's answer before it is sent; raises JournalError if a write is not on disk."""
        if not 200 <= status < 300:
            return
        if target.startswith(DYNAMODB_TARGET):
            self._journal(target[len(DYNAMODB_TARGET) :], request, response)
        elif target == PUT_EVENTS_TARGET:
            self._publish(request, response)

    def _journal(self, op: str, request: bytes, response: bytes) -> None:
        journal = self.journal
        if journal is None or op not in WRITE_OPS:
            return
        try:
            wire = json.loads(request or b"{}")
            if op == "BatchWriteItem":
                unprocessed = (json.loads(response or b"{}") or {}).get("UnprocessedItems")
                wire = processed_batch(wire, unprocessed)
                if wire is None:
                    return
            records = self.streams.records_of(op, wire) if self.streams is not None else []
            journal.append_many([(op, from_wire(self._input_shape(op), wire)), *records])
        except Exception as exc:
            raise JournalError(f"{op} could not be journaled: {type(exc).__name__}: {exc}") from exc
        if records and self.streams is not None:
            self.streams.accept(records)

    def _publish(self, request: bytes, response: bytes) -> None:
        publish = self.publish
        if publish is None:
            return
        entries = (json.loads(request or b"{}") or {}).get("Entries") or []
        results = (json.loads(response or b"{}") or {}).get("Entries") or []
        accepted = []
        for entry, result in zip(entries, results, strict=False):
            event_id = result.get("EventId") if isinstance(result, dict) else None
            if event_id and isinstance(entry, dict):
                accepted.append((entry, str(event_id)))
        if self.journal is None:  # nothing to keep them in: delivered from memory only
            for entry, event_id in accepted:
                publish(entry, event_id, None)
            return
        records = []
        for entry, event_id in accepted:
            self.bus_seq += 1
            records.append((EVENT_OP, {"seq": self.bus_seq, "entry": entry, "event_id": event_id}))
        try:  # like EventBridge: an accepted event is kept until it is delivered
            self.journal.append_many(records)
        except Exception as exc:
            raise JournalError(f"PutEvents could not be journaled: {type(exc).__name__}: {exc}") from exc
        for _, params in records:
            publish(params["entry"], params["event_id"], params["seq"])

    def _input_shape(self, op: str) -> Shape | None:
        if op not in self._shapes:
            model = botocore.session.get_session().get_service_model("dynamodb")
            self._shapes[op] = model.operation_model(op).input_shape
        return self._shapes[op]
