"""Minds' snapshots in S3: the packed corpus of a mind at a change-log position (search/snapshot.py
makes and reads the bytes). One object per mind and epoch (`keys.snapshot_key`), replaced as the mind
moves on, each replacement conditional on the object it replaces (an older snapshot never replaces a
newer one); its position and model also in its metadata, so that a writer learns them from a HEAD.

DynamoDB stays the source of truth: a snapshot is a copy a reader checks against the mind's version
and brings up to date from the change log. It goes with its mind: `delete_mind` and `delete_user`
delete every object under the mind's or the user's prefix (after the items: see `delete_user`), and
the bucket's lifecycle rule expires what nothing has rewritten for a while. The bucket is encrypted
with the stack's snapshot key (template.yaml); no call here names a key or an encryption.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from synapse.core.errors import UpstreamUnavailable
from synapse.store import bucket
from synapse.store.keys import Space, snapshot_key, snapshot_mind_prefix, snapshot_user_prefix

__all__ = ["Stored", "delete", "delete_mind", "delete_user", "enabled", "get", "head", "put"]

client = bucket.client
enabled = bucket.enabled
_bucket = bucket.name
_code = bucket.code
_MISSING, _LOST = bucket.MISSING, bucket.LOST


def _unavailable(exc: Exception) -> UpstreamUnavailable:
    return UpstreamUnavailable("The snapshot store is unavailable; try again shortly.", retry_after=2)


@dataclass(frozen=True)
class Stored:
    """A snapshot object as S3 describes it: the position and model it holds, its ETag."""

    epoch: str
    seq: int
    model_key: str | None
    etag: str
    size: int


def _stored(epoch: str, answer: dict[str, Any]) -> Stored:
    meta = answer.get("Metadata") or {}
    return Stored(
        epoch=epoch,
        seq=int(meta.get("seq", "-1")),
        model_key=meta.get("model") or None,
        etag=str(answer.get("ETag", "")),
        size=int(answer.get("ContentLength", 0)),
    )


def head(space: Space, epoch: str) -> Stored | None:
    """What the mind's snapshot of that epoch holds (no body); None if there is none."""
    try:
        answer = client().head_object(Bucket=_bucket(), Key=snapshot_key(space, epoch))
    except ClientError as exc:
        if _code(exc) in _MISSING:
            return None
        raise _unavailable(exc) from exc
    except BotoCoreError as exc:
        raise _unavailable(exc) from exc
    return _stored(epoch, answer)


def get(space: Space, epoch: str) -> tuple[Stored, bytes] | None:
    """The mind's snapshot of that epoch and its bytes; None if there is none."""
    try:
        answer = client().get_object(Bucket=_bucket(), Key=snapshot_key(space, epoch))
        body = answer["Body"].read()
    except ClientError as exc:
        if _code(exc) in _MISSING:
            return None
        raise _unavailable(exc) from exc
    except BotoCoreError as exc:
        raise _unavailable(exc) from exc
    return _stored(epoch, answer), body


def put(
    space: Space, epoch: str, seq: int, model_key: str | None, body: bytes, replacing: Stored | None
) -> bool:
    """Store a snapshot of the mind at (epoch, seq) if the object is still `replacing` (None: if
    there is none yet); False if another writer changed it first (look again)."""
    condition = {"IfMatch": replacing.etag} if replacing is not None else {"IfNoneMatch": "*"}
    try:
        client().put_object(
            Bucket=_bucket(),
            Key=snapshot_key(space, epoch),
            Body=body,
            ContentType="application/octet-stream",
            Metadata={"seq": str(seq), "model": model_key or ""},
            **condition,
        )
    except ClientError as exc:
        if _code(exc) in _LOST or (replacing is not None and _code(exc) in _MISSING):
            return False
        raise _unavailable(exc) from exc
    except BotoCoreError as exc:
        raise _unavailable(exc) from exc
    return True


def delete(space: Space, epoch: str) -> None:
    """The mind's snapshot of that epoch, if any."""
    try:
        client().delete_object(Bucket=_bucket(), Key=snapshot_key(space, epoch))
    except (ClientError, BotoCoreError) as exc:
        raise _unavailable(exc) from exc


def delete_mind(user_id: str, mind_id: str) -> int:
    """Every snapshot of a mind (any epoch); returns how many."""
    return _delete_prefix(snapshot_mind_prefix(user_id, mind_id))


def delete_user(user_id: str) -> int:
    """Every snapshot of every mind of a user; returns how many."""
    return _delete_prefix(snapshot_user_prefix(user_id))


def _delete_prefix(prefix: str) -> int:
    return bucket.delete_prefix(prefix)
