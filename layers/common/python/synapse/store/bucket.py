"""The stack's bucket (SNAPSHOT_BUCKET): one S3 client, its name, its errors, deletion by prefix.

Two kinds of objects live in it, each under its own prefix with its own module: minds' snapshots
(`snapshots/`, store/snapshots.py) and users' export files (`exports/`, store/account/exports.py).
The bucket is encrypted with the stack's snapshot key (template.yaml); no call here names a key.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from synapse.aws import clients as aws
from synapse.core.config import settings
from synapse.core.errors import UpstreamUnavailable
from synapse.core.state import per_container

MISSING = {"NoSuchKey", "404", "NotFound"}
LOST = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409"}


@per_container
def client() -> Any:
    # SigV4 (the only signature SSE-KMS objects accept, presigned URLs included)
    return aws.client("s3", connect_timeout=2, read_timeout=20, signature_version="s3v4")


def enabled() -> bool:
    """Objects are read and written only where the stack gives a bucket (SNAPSHOT_BUCKET)."""
    return settings().snapshot_bucket is not None


def name() -> str:
    bucket = settings().snapshot_bucket
    if bucket is None:
        raise UpstreamUnavailable("No bucket is configured.", retry_after=60)
    return bucket


def code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def unavailable(exc: Exception | None = None) -> UpstreamUnavailable:
    return UpstreamUnavailable("The file store is unavailable; try again shortly.", retry_after=2)


def delete_prefix(prefix: str) -> int:
    """Every object under `prefix`; returns how many."""
    if not enabled():
        return 0
    bucket, deleted = name(), 0
    kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
    try:
        while True:
            page = client().list_objects_v2(**kwargs)
            found = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if found:  # a page holds at most 1,000 keys: what DeleteObjects takes
                answer = client().delete_objects(Bucket=bucket, Delete={"Objects": found, "Quiet": True})
                if answer.get("Errors"):
                    raise UpstreamUnavailable(
                        "The file store did not delete everything; try again shortly.", retry_after=2
                    )
                deleted += len(found)
            if not page.get("IsTruncated"):
                return deleted
            kwargs["ContinuationToken"] = page["NextContinuationToken"]
    except (ClientError, BotoCoreError) as exc:
        raise unavailable(exc) from exc
