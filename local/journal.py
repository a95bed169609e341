"""Durability for moto's in-memory DynamoDB: a journal of every acknowledged write.

botocore hooks on every botocore session (boto3's included) see each DynamoDB call. Calls are
serialised by one lock held from `before-call` to `after-call`, so the journal's order is the order
moto applied them; a
successful write is appended as `{"op", "params"}` and fsync'ed before the caller gets its answer.
At start the journal is replayed into the fresh tables with an unhooked client, then compacted into
one PutItem per item (written beside it, fsync'ed, renamed over it).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from botocore import xform_name
from botocore.exceptions import ClientError
from botocore.model import OperationModel, Shape

log = logging.getLogger("local.journal")

WRITE_OPS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
_B64 = "__b64__"
_CTX_PARAMS = "synapse_local_journal_params"
_CTX_LOCKED = "synapse_local_journal_locked"


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
        line = json.dumps({"op": op, "params": encode(params)}, separators=(",", ":")).encode() + b"\n"
        with self._lock:
            if self._fh is None:
                self.open()
            self._fh.write(line)
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self.appended += 1

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

    def replay(self, client: Any) -> tuple[int, int]:
        """Apply every record through `client` (which must not be hooked). Returns (applied, failed)."""
        applied = failed = 0
        for op, params in self.records():
            try:
                getattr(client, xform_name(op))(**params)
                applied += 1
            except ClientError as exc:
                failed += 1
                log.warning("journal replay: %s failed (%s)", op, exc.response.get("Error", {}).get("Code"))
        return applied, failed

    def compact(self, client: Any, tables: Iterable[str]) -> int:
        """Rewrite the journal as one PutItem per live item: temp file, fsync, atomic rename."""
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
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
            _fsync_dir(self.path.parent)
            self._fh = self.path.open("ab")
        return count


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


# --- the botocore hooks ----------------------------------------------------------------------------


class JournalHooks:
    """before-call / after-call handlers for DynamoDB that journal successful writes in order."""

    UNIQUE = "synapse-local-journal"

    def __init__(self, journal: Journal, lock_timeout: float = 120.0) -> None:
        self.journal = journal
        self._write_lock = threading.RLock()
        self._timeout = lock_timeout

    def register(self, events: Any) -> None:
        events.register("before-call.dynamodb", self.before_call, unique_id=f"{self.UNIQUE}-before")
        events.register("after-call.dynamodb", self.after_call, unique_id=f"{self.UNIQUE}-after")
        events.register("after-call-error.dynamodb", self.after_error, unique_id=f"{self.UNIQUE}-error")

    def before_call(
        self, model: OperationModel, params: dict[str, Any], context: dict[str, Any], **_: Any
    ) -> None:
        if model.name in WRITE_OPS:
            body = params.get("body") or b"{}"
            wire = json.loads(body.decode("utf-8") if isinstance(body, bytes) else body)
            context[_CTX_PARAMS] = from_wire(model.input_shape, wire)
        # every call, reads too: moto is not thread-safe (a cancelled transaction restores a snapshot
        # of the whole table, undoing writes that landed while it ran), so it sees one call at a time
        if self._write_lock.acquire(timeout=self._timeout):
            context[_CTX_LOCKED] = True
        else:
            log.error("journal write lock timed out; writing %s out of order", model.name)

    def after_call(
        self,
        http_response: Any,
        parsed: dict[str, Any],
        model: OperationModel,
        context: dict[str, Any],
        **_: Any,
    ) -> None:
        params = context.pop(_CTX_PARAMS, None)
        try:
            if params is None or not 200 <= http_response.status_code < 300:
                return
            if model.name == "BatchWriteItem":
                params = processed_batch(params, parsed.get("UnprocessedItems"))
                if params is None:
                    return
            self.journal.append(model.name, params)
        finally:
            self._release(context)

    def after_error(self, context: dict[str, Any], **_: Any) -> None:
        context.pop(_CTX_PARAMS, None)
        self._release(context)

    def _release(self, context: dict[str, Any]) -> None:
        if context.pop(_CTX_LOCKED, False):
            self._write_lock.release()
