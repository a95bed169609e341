"""DynamoDB Streams and their Lambda triggers, emulated from what the journal sees.

moto's server keeps no stream the local run could poll across restarts, so the stream is made where
every write already passes: the tap at moto's server (local/journal.py). Each item a committed write
puts whole (PutItem, a BatchWriteItem PutRequest, a TransactWriteItems Put) into a table with a
StreamSpecification becomes an INSERT record (Keys, and NewImage unless the view is KEYS_ONLY), as
the stream of a template function's `DynamoDB` event would carry it. The event's FilterCriteria
patterns are applied then (Lambda's filter syntax is EventBridge's: local/events.py's `matches`), and
a record that passes is numbered in its source's order and journaled with the write, in the same
fsync: a write acknowledged is a record kept.

A poller per source hands records to the function in batches of BatchSize, the way Lambda's event
source mapping does: a batch that raises is retried whole; a `batchItemFailures` answer checkpoints
before the lowest failed record, and the batch is retried from there; after MaximumRetryAttempts (or
past MaximumRecordAgeInSeconds) the first failing record is dropped with an error in the log (AWS
would send it to the on-failure destination). Each position handled is acknowledged in acks.json; at
start the records after it are delivered again (at least once, as Lambda's own retries are).

Not emulated: UpdateItem and DeleteItem make no records (MODIFY / REMOVE), and a Put over an existing
item is an INSERT here. The one consumer (the change events) reads new change-log entries, which are
always Puts of new items.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from local.apigw import ACCOUNT_ID, REGION
from local.events import matches
from local.functions import reason
from local.journal import STREAM_OP, Acks
from local.template import StreamSourceDef, Template

log = logging.getLogger("local.streams")

MAX_BACKOFF = 30.0


def put_items(op: str, wire: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(table, item) of every item a write (the client's JSON request) puts whole."""
    if op == "PutItem":
        yield str(wire.get("TableName")), wire.get("Item") or {}
    elif op == "BatchWriteItem":
        for table, requests in (wire.get("RequestItems") or {}).items():
            for request in requests:
                if "PutRequest" in request:
                    yield str(table), request["PutRequest"].get("Item") or {}
    elif op == "TransactWriteItems":
        for action in wire.get("TransactItems") or []:
            if "Put" in action:
                yield str(action["Put"].get("TableName")), action["Put"].get("Item") or {}


def queue_key(source: StreamSourceDef) -> str:
    return f"stream:{source.name}"


class StreamPoller:
    """One source's records, handed to its function in order, a batch at a time."""

    def __init__(
        self,
        source: StreamSourceDef,
        invoke: Callable[[str, dict[str, Any]], Any],
        acked: Callable[[str, int], None],
        backoff: float = 0.5,
    ) -> None:
        self.source = source
        self.invoke = invoke
        self.acked = acked
        self.backoff = backoff
        self._records: deque[tuple[int, dict[str, Any]]] = deque()
        self._cond = threading.Condition()
        self._busy = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.delivered = 0  # records handled (retries not counted)
        self.dropped = 0

    def put(self, seq: int, record: dict[str, Any]) -> None:
        with self._cond:
            self._records.append((seq, record))
            self._cond.notify_all()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"stream-{self.source.function}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
            self._thread = None

    def drain(self, timeout: float = 30.0) -> bool:
        """Wait until every record has been handled (tests, and a clean shutdown)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._records or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(timeout=min(left, 0.1))
        return True

    def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            with self._cond:
                while not self._records and not self._stop.is_set():
                    self._cond.wait(timeout=1.0)
                if self._stop.is_set():
                    return
                batch = [self._records[i] for i in range(min(len(self._records), self.source.batch_size))]
                self._busy = True
            retry_from = self._call(batch)
            done = batch if retry_from is None else batch[:retry_from]
            attempt = 0 if retry_from is None else attempt + 1
            dropped = retry_from is not None and self._exhausted(attempt, batch[retry_from][1])
            if dropped:
                assert retry_from is not None
                log.error(
                    "%s: stream record %d dropped after %d attempts (AWS would send it to the on-failure "
                    "destination)",
                    self.source.name,
                    batch[retry_from][0],
                    attempt,
                )
                done = batch[: retry_from + 1]
                self.dropped += 1
                attempt = 0
            with self._cond:
                for _ in done:
                    self._records.popleft()
                self._busy = False
                self._cond.notify_all()
            if done:
                self.delivered += len(done)
                self.acked(queue_key(self.source), done[-1][0])
            if retry_from is not None and not dropped:
                self._stop.wait(min(MAX_BACKOFF, self.backoff * (2 ** min(attempt - 1, 6))))

    def _exhausted(self, attempt: int, record: dict[str, Any]) -> bool:
        retries, max_age = self.source.retries, self.source.max_age
        if retries >= 0 and attempt > retries:
            return True
        made = float((record.get("dynamodb") or {}).get("ApproximateCreationDateTime") or time.time())
        return max_age >= 0 and time.time() - made > max_age

    def _call(self, batch: list[tuple[int, dict[str, Any]]]) -> int | None:
        """Invoke the function with a batch: None when it is all done, else where to retry from."""
        try:
            answer = self.invoke(self.source.function, {"Records": [record for _, record in batch]})
        except Exception as exc:  # noqa: BLE001 - like Lambda: the whole batch is retried
            log.warning("%s: a batch of %d failed: %s", self.source.name, len(batch), reason(exc))
            return 0
        failures = answer.get("batchItemFailures") if isinstance(answer, dict) else None
        if not failures:
            return None
        ids = [f.get("itemIdentifier") if isinstance(f, dict) else None for f in failures]
        positions = [
            i for i, (_, record) in enumerate(batch) if record["dynamodb"]["SequenceNumber"] in set(ids)
        ]
        if any(not i for i in ids) or not positions:
            return 0  # an answer Lambda cannot read is a failure of the whole batch
        log.info("%s: %d of %d records to retry", self.source.name, len(batch) - min(positions), len(batch))
        return min(positions)


class LocalStreams:
    """The template's stream sources: records made by the tap, delivered by one poller each."""

    def __init__(
        self,
        tpl: Template,
        invoke: Callable[[str, dict[str, Any]], Any],
        acks: Acks,
        backoff: float = 0.5,
    ) -> None:
        self.acks = acks
        self.tables: dict[str, tuple[str, list[str], str]] = {}  # local name → (logical, keys, view)
        self.sources: list[StreamSourceDef] = []
        for source in tpl.streams:
            props = tpl.tables[source.table]
            view = str((props.get("StreamSpecification") or {}).get("StreamViewType") or "")
            if not view:
                log.warning("%s reads %s, which has no stream: no records", source.name, source.table)
                continue
            keys = [str(k["AttributeName"]) for k in props.get("KeySchema", [])]
            self.tables[tpl.table_name(source.table)] = (source.table, keys, view)
            self.sources.append(source)
        self.pollers = {s.name: StreamPoller(s, invoke, acks.ack, backoff) for s in self.sources}
        self.seqs = {s.name: acks.get(queue_key(s)) for s in self.sources}

    def records_of(self, op: str, wire: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """The stream records a committed write makes, numbered (called inside moto's one lock)."""
        out: list[tuple[str, dict[str, Any]]] = []
        for table, item in put_items(op, wire):
            if table not in self.tables:
                continue
            logical, keys, view = self.tables[table]
            record = self._record(table, item, keys, view)
            for source in self.sources:
                if source.table != logical:
                    continue
                if source.filters and not any(matches(p, record) for p in source.filters):
                    continue
                self.seqs[source.name] += 1
                seq = self.seqs[source.name]
                stream = {**record["dynamodb"], "SequenceNumber": f"{seq:021d}", "SizeBytes": len(repr(item))}
                numbered = {**record, "dynamodb": stream}
                out.append((STREAM_OP, {"source": source.name, "seq": seq, "record": numbered}))
        return out

    def accept(self, records: list[tuple[str, dict[str, Any]]]) -> None:
        """Records now on disk: to their pollers."""
        for op, params in records:
            poller = self.pollers.get(str(params.get("source"))) if op == STREAM_OP else None
            if poller is not None:
                poller.put(int(params["seq"]), params["record"])

    def restore(self, pending: Iterable[tuple[str, dict[str, Any]]]) -> int:
        """Records journaled before a restart and not acknowledged: queued first, numbering after them."""
        count = 0
        for op, params in pending:
            name = str(params.get("source"))
            if op != STREAM_OP or name not in self.pollers:
                continue
            self.seqs[name] = max(self.seqs[name], int(params["seq"]))
            self.pollers[name].put(int(params["seq"]), params["record"])
            count += 1
        return count

    def start(self) -> None:
        for poller in self.pollers.values():
            poller.start()

    def drain(self, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        return all(p.drain(max(0.0, deadline - time.monotonic())) for p in self.pollers.values())

    def stop(self) -> None:
        for poller in self.pollers.values():
            poller.stop()

    @staticmethod
    def _record(table: str, item: dict[str, Any], keys: list[str], view: str) -> dict[str, Any]:
        image: dict[str, Any] = {"Keys": {k: item[k] for k in keys if k in item}}
        if view in ("NEW_IMAGE", "NEW_AND_OLD_IMAGES"):
            image["NewImage"] = item
        return {
            "eventID": uuid.uuid4().hex,
            "eventName": "INSERT",
            "eventVersion": "1.1",
            "eventSource": "aws:dynamodb",
            "awsRegion": REGION,
            "dynamodb": {
                "ApproximateCreationDateTime": int(time.time()),
                **image,
                "StreamViewType": view,
            },
            "eventSourceARN": f"arn:aws:dynamodb:{REGION}:{ACCOUNT_ID}:table/{table}/stream/local",
        }
