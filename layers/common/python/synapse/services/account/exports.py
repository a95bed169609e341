"""Exports of any size (POST /me/exports): everything of a user written as JSON Lines to the stack's
bucket in the background, then downloaded through a presigned URL.

`start` records the export and asks for it on MemoryBus (ExportRequested); the writer
(functions/export_writer, `write`) streams the user's partition into the file a page at a time and
marks the export ready; `status` answers with a URL signed for an hour. The file and its record go a
day after the export is asked for, or with `DELETE /me`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from synapse.aws import events
from synapse.core.errors import NotFound, SynapseError
from synapse.core.models.account import ExportJob, ExportStarted, ExportStatus, ProviderInfo
from synapse.core.models.base import iso, utcnow
from synapse.core.observability import logger
from synapse.services.account.auth import key_info
from synapse.services.account.minds import out
from synapse.services.account.privacy import summary_out
from synapse.store.account import exports as store
from synapse.store.account import users, webhooks
from synapse.store.account.credentials import ApiKeyRecord, ProviderRecord

FORMAT, VERSION = "synapse-export", 1
KEPT = timedelta(hours=24)  # an export's file and record, from when it was asked for
URL_SECONDS = 3600  # a download URL is good this long from the answer that gives it
# the writer function's timeout (template.yaml) and a margin: an export pending longer was cut off
WRITER_LIMIT = timedelta(minutes=16)
NO_EXPORT = "No export with that id."
BUFFER_BYTES = 256 * 1024  # lines handed to the upload at a time


def start(user_id: str) -> ExportStarted:
    """Ask for an export. While one is being written, asking again answers that one: each export
    reads the whole account, and the one under way has everything asked for until it started."""
    now = utcnow()
    for record in store.list_all(user_id):
        if record.status is ExportStatus.pending and now - record.created_at < WRITER_LIMIT:
            return ExportStarted(export_id=record.export_id, status=ExportStatus.pending)
    export_id = uuid.uuid4().hex
    store.create(user_id, export_id, now, now + KEPT)
    try:
        events.publish_export_requested(user_id, export_id)
    except Exception:
        store.fail(user_id, export_id, utcnow())  # not pending: the next POST asks again
        raise
    return ExportStarted(export_id=export_id, status=ExportStatus.pending)


def status(user_id: str, export_id: str) -> ExportJob:
    """An export's state; once ready, a URL good for an hour (never past the file's deletion)."""
    record = store.get(user_id, export_id) if _is_export_id(export_id) else None
    if record is None:
        raise NotFound(NO_EXPORT)
    if record.status is ExportStatus.pending and utcnow() - record.created_at >= WRITER_LIMIT:
        return ExportJob(status=ExportStatus.failed)  # its writer was cut off (no record of it said so)
    if record.status is not ExportStatus.ready:
        return ExportJob(status=record.status)
    now = utcnow()
    seconds = min(URL_SECONDS, int((record.deletes_at - now).total_seconds()))
    if seconds <= 0:
        raise NotFound(NO_EXPORT)
    return ExportJob(
        status=record.status,
        url=store.url(user_id, export_id, seconds),
        bytes=record.bytes,
        records=record.records,
        expires_at=now.replace(microsecond=0) + timedelta(seconds=seconds),
    )


def _is_export_id(value: str) -> bool:
    return len(value) == 32 and all(c in "0123456789abcdef" for c in value)


def write(user_id: str, export_id: str) -> str:
    """Write the export file (the ExportRequested consumer); returns what happened. A failure marks
    the export failed (the user asks again); an export whose user was deleted meanwhile leaves no file."""
    record = store.get(user_id, export_id)
    if record is None:
        return "gone"
    if record.status is not ExportStatus.pending:
        return "done"  # a repeated event
    counted = {"records": 0}
    try:
        size = store.upload(user_id, export_id, _chunks(lines(user_id, utcnow()), counted))
    except (SynapseError, BotoCoreError, ClientError, KeyError, TypeError, ValueError) as exc:
        # the table or the bucket failed past their retries (or a record could not be read): the
        # error's kind is logged, not its text (it may quote what was stored)
        logger.error("export failed", extra={"export_id": export_id, "error": type(exc).__name__})
        store.fail(user_id, export_id, utcnow())
        return "failed"
    finished = utcnow()
    if not store.finish(user_id, export_id, size, counted["records"], finished, record.deletes_at):
        store.delete_file(user_id, export_id)  # its user was deleted while it was written
        return "gone"
    return "ready"


def _chunks(records: Iterator[dict[str, Any]], counted: dict[str, int]) -> Iterator[bytes]:
    """The lines as byte chunks of about BUFFER_BYTES; counts the records (the header aside)."""
    buffer: list[bytes] = []
    size = 0
    for n, record in enumerate(records):
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        buffer.append(line)
        size += len(line)
        counted["records"] = n  # the first line is the header
        if size >= BUFFER_BYTES:
            yield b"".join(buffer)
            buffer, size = [], 0
    if buffer:
        yield b"".join(buffer)


def lines(user_id: str, created_at: datetime) -> Iterator[dict[str, Any]]:
    """The export file's records (API.md, "Export for any size"): the header, then one record a
    line with its `type`. Keys, provider keys and webhooks are hints (never a secret)."""
    yield {"format": FORMAT, "version": VERSION, "user_id": user_id, "created_at": iso(created_at)}
    for entry in users.stream(user_id):
        yield _record(entry)


def _record(entry: users.Entry) -> dict[str, Any]:
    if isinstance(entry, users.MemoryEntry):
        return {
            "type": "memory",
            **entry.memory.model_dump(mode="json"),
            "history": [v.model_dump(mode="json") for v in entry.history],
        }
    if isinstance(entry, users.MessageEntry):
        m = entry.message
        return {
            "type": "message",
            "mind_id": entry.mind_id,
            "session_id": entry.session_id,
            "seq": m.seq,
            "role": m.role,
            "content": m.content,
            "created_at": iso(m.created_at),
        }
    if isinstance(entry, users.SummaryEntry):
        return {"type": "summary", **summary_out(entry.mind_id, entry.session_id, entry.summary)}
    if isinstance(entry, users.SessionEntry):
        return {
            "type": "session",
            "mind_id": entry.mind_id,
            "session_id": entry.session_id,
            "msg_count": entry.msg_count,
            "chunks": entry.chunks,
        }
    if isinstance(entry, users.MindEntry):
        return {"type": "mind", **out(entry.record).model_dump(mode="json"), "identity": entry.identity}
    if isinstance(entry, ApiKeyRecord):
        return {"type": "key", **key_info(entry).model_dump(mode="json")}
    if isinstance(entry, ProviderRecord):
        info = ProviderInfo(provider=entry.provider, hint=entry.hint, updated_at=entry.updated_at)
        return {"type": "provider", **info.model_dump(mode="json")}
    return {"type": "webhook", **webhooks.info(entry).model_dump(mode="json")}
