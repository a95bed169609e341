"""Users' export files (POST /me/exports): a record per export in the user's partition
(`export:<id>`: status, times, size), and the file itself in the stack's bucket
(`exports/<hash of the user>/<id>.jsonl`, keys.export_key).

The record and the file go together after a day: the record by the table's TTL, the file by the
bucket's lifecycle rule on `exports/` (template.yaml); until DynamoDB's TTL gets to it, a record past
its time is read as absent. `DELETE /me` deletes both at once (users.delete_user).
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from s3transfer.manager import TransferConfig, TransferManager

from synapse.core.models.account import ExportStatus
from synapse.core.models.base import iso, parse_iso, utcnow
from synapse.store import bucket, db
from synapse.store.codec import n, plain_item, s
from synapse.store.keys import EXPORT, export_key, export_sk, export_user_prefix, user_pk

CONTENT_TYPE = "application/x-ndjson; charset=utf-8"
# parts of the multipart upload: S3 takes 5 MiB at least (the last aside); the writer holds a few
PART_BYTES = 8 * 1024 * 1024
UPLOAD_THREADS = 4


@dataclass(frozen=True)
class ExportRecord:
    export_id: str
    status: ExportStatus
    created_at: datetime
    deletes_at: datetime  # the record and its file go then
    finished_at: datetime | None = None
    bytes: int | None = None
    records: int | None = None


def _from_item(raw: dict[str, Any]) -> ExportRecord:
    return ExportRecord(
        export_id=raw["sk"].removeprefix(EXPORT),
        status=ExportStatus(raw["status"]),
        created_at=parse_iso(raw["created_at"]),
        deletes_at=datetime.fromtimestamp(int(raw["ttl"]), tz=UTC),
        finished_at=parse_iso(raw["finished_at"]) if raw.get("finished_at") else None,
        bytes=int(raw["bytes"]) if "bytes" in raw else None,
        records=int(raw["records"]) if "records" in raw else None,
    )


def create(user_id: str, export_id: str, created_at: datetime, deletes_at: datetime) -> None:
    item = {
        **db.key(user_pk(user_id), export_sk(export_id)),
        "status": s(ExportStatus.pending.value),
        "created_at": s(iso(created_at)),
        "ttl": n(int(deletes_at.timestamp())),
    }
    with db.translate():
        db.client().put_item(TableName=db.table(), Item=item, ConditionExpression="attribute_not_exists(sk)")


def get(user_id: str, export_id: str) -> ExportRecord | None:
    """The export, if it exists and has not reached its time (DynamoDB's TTL deletes late)."""
    item = db.get(user_pk(user_id), export_sk(export_id))
    if item is None:
        return None
    record = _from_item(plain_item(item))
    return record if record.deletes_at > utcnow() else None


def list_all(user_id: str) -> list[ExportRecord]:
    """The user's exports that have not reached their time (a day's worth at most)."""
    now = utcnow()
    records = [_from_item(plain_item(i)) for i in db.query_prefix(user_pk(user_id), EXPORT)]
    return [r for r in records if r.deletes_at > now]


def _leave_pending(user_id: str, export_id: str, status: ExportStatus, values: dict[str, Any]) -> bool:
    """Move a pending export that still exists to `status` with `values` (attribute → DynamoDB value);
    False if it was finished, or deleted with its user, meanwhile."""
    names = {"#st": "status", **{f"#a{i}": name for i, name in enumerate(values)}}
    sets = ", ".join(f"#a{i} = :a{i}" for i in range(len(values)))
    try:
        with db.translate():
            db.client().update_item(
                TableName=db.table(),
                Key=db.key(user_pk(user_id), export_sk(export_id)),
                UpdateExpression=f"SET #st = :to, {sets}",
                ConditionExpression="attribute_exists(sk) AND #st = :pending",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={
                    ":pending": s(ExportStatus.pending.value),
                    ":to": s(status.value),
                    **{f":a{i}": value for i, value in enumerate(values.values())},
                },
            )
    except ClientError as exc:
        if db.is_condition_failure(exc):
            return False
        raise
    return True


def finish(user_id: str, export_id: str, size: int, records: int, at: datetime, deletes_at: datetime) -> bool:
    """Mark the export ready; its record now lives as long as its file (`deletes_at`)."""
    values = {
        "finished_at": s(iso(at)),
        "bytes": n(size),
        "records": n(records),
        "ttl": n(int(deletes_at.timestamp())),
    }
    return _leave_pending(user_id, export_id, ExportStatus.ready, values)


def fail(user_id: str, export_id: str, at: datetime) -> bool:
    return _leave_pending(user_id, export_id, ExportStatus.failed, {"finished_at": s(iso(at))})


# --- the file ---------------------------------------------------------------------------------------


class _Chunks(io.RawIOBase):
    """A read-only stream over an iterable of byte strings: the upload pulls the file as it is made,
    so the writer never holds more than the parts in flight."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._left = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._left:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._left = chunk
        size = min(len(buffer), len(self._left))
        buffer[:size] = self._left[:size]
        self._left = self._left[size:]
        return size


def upload(user_id: str, export_id: str, chunks: Iterable[bytes]) -> int:
    """Write the export file from `chunks` as they come (s3transfer's multipart upload of a stream);
    returns its size in bytes. An error while making or sending it leaves no file (the upload is
    aborted) and is raised."""
    sent = 0

    def counted() -> Iterable[bytes]:
        nonlocal sent
        for chunk in chunks:
            sent += len(chunk)
            yield chunk

    config = TransferConfig(
        multipart_threshold=PART_BYTES, multipart_chunksize=PART_BYTES, max_request_concurrency=UPLOAD_THREADS
    )
    stream = io.BufferedReader(_Chunks(counted()), buffer_size=1024 * 1024)
    try:
        with TransferManager(bucket.client(), config) as manager:
            future = manager.upload(
                stream,
                bucket.name(),
                export_key(user_id, export_id),
                extra_args={"ContentType": CONTENT_TYPE},
            )
            future.result()
    except (ClientError, BotoCoreError) as exc:
        raise bucket.unavailable(exc) from exc
    return sent


def url(user_id: str, export_id: str, seconds: int) -> str:
    """A presigned GET of the export file, good for `seconds` (a download names the file)."""
    try:
        return str(
            bucket.client().generate_presigned_url(
                "get_object",
                Params={
                    "Bucket": bucket.name(),
                    "Key": export_key(user_id, export_id),
                    "ResponseContentDisposition": f'attachment; filename="synapse-export-{export_id}.jsonl"',
                },
                ExpiresIn=seconds,
            )
        )
    except (ClientError, BotoCoreError) as exc:
        raise bucket.unavailable(exc) from exc


def delete_file(user_id: str, export_id: str) -> None:
    try:
        bucket.client().delete_object(Bucket=bucket.name(), Key=export_key(user_id, export_id))
    except (ClientError, BotoCoreError) as exc:
        raise bucket.unavailable(exc) from exc


def delete_user(user_id: str) -> int:
    """Every export file of a user (their records go with the partition); returns how many."""
    return bucket.delete_prefix(export_user_prefix(user_id))
