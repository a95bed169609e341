"""The change log of a mind's memories: how a container's copy of them catches up by reading only
what changed since it last looked.

The version item (`ver`) holds (epoch, seq). `seq` numbers the writes of the mind's memories: each
write takes the next number in the same transaction as the memories it changes, conditional on the
number it read, so the numbers have no gaps and follow commit order; and it logs `chg:<seq>` with the
ids it changed (deleted ones included), kept CHANGE_LOG_DAYS. A reader at seq `s` that finds `t` reads
the log entries s+1..t and then those memories only. `epoch` is drawn anew whenever the version item
is made again (a user's or a mind's data deleted, or a first-release token): a reader of another epoch,
or one whose entries have expired, reads everything again.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from synapse.store import db
from synapse.store.codec import n, s
from synapse.store.keys import CHANGE, VERSION_TOKEN, Space, change_sk

CHANGE_LOG_DAYS = 7  # a container further behind than this reads its mind again (never in practice)
CANCELLED = "TransactionCanceledException"


@dataclass(frozen=True)
class Version:
    """Where a mind's memories stand: `seq` writes into the epoch `epoch` ("" before any write)."""

    epoch: str = ""
    seq: int = 0

    @property
    def token(self) -> str:
        return f"{self.epoch}:{self.seq}"


def read(space: Space) -> Version:
    """The mind's version (one small consistent GetItem)."""
    item = db.get(space.pk, space.sk(VERSION_TOKEN))
    if not item:
        return Version()
    if "seq" not in item:  # a first-release token: no log behind it
        return Version(epoch="legacy-" + str(item.get("v", {}).get("S", "")), seq=0)
    return Version(epoch=str(item["epoch"]["S"]), seq=int(item["seq"]["N"]))


def step(space: Space, read_as: Version, ids: Sequence[str]) -> list[dict[str, Any]]:
    """The two actions a write of `ids` adds to its transaction: the next seq (conditional on the one
    read) and its log entry."""
    nxt = read_as.seq + 1
    # a new version item (none yet, or a first-release token) starts a new epoch
    epoch = read_as.epoch if read_as.seq > 0 else uuid.uuid4().hex
    update: dict[str, Any] = {
        "TableName": db.table(),
        "Key": db.key(space.pk, space.sk(VERSION_TOKEN)),
        "UpdateExpression": "SET seq = :next, epoch = :epoch REMOVE v",
        "ExpressionAttributeValues": {":next": n(nxt), ":epoch": s(epoch)},
    }
    if read_as.seq > 0:
        update["ConditionExpression"] = "seq = :seq"
        update["ExpressionAttributeValues"][":seq"] = n(read_as.seq)
    else:
        update["ConditionExpression"] = "attribute_not_exists(seq)"
    entry = {
        **db.key(space.pk, space.sk(change_sk(nxt))),
        "ids": {"L": [s(i) for i in dict.fromkeys(ids)]},
        "ttl": n(int(time.time()) + CHANGE_LOG_DAYS * 86400),
    }
    return [{"Update": update}, {"Put": {"TableName": db.table(), "Item": entry}}]


def transact(actions: list[dict[str, Any]]) -> list[bool] | None:
    """One transaction: None if written, else which actions' conditions failed (all False: a
    conflict with another transaction in flight, to be tried again)."""
    try:
        with db.translate():
            db.client().transact_write_items(TransactItems=actions)  # type: ignore[arg-type]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in (CANCELLED, "TransactionConflictException"):
            raise
        reasons = exc.response.get("CancellationReasons") or []
        return [r.get("Code") == "ConditionalCheckFailed" for r in reasons] or [False] * len(actions)
    return None


def changed_ids(space: Space, since: Version, now: Version) -> list[str] | None:
    """The ids written between two versions of one epoch, oldest change first; None when the log
    cannot tell (another epoch, or entries gone): read everything again."""
    if since.epoch != now.epoch or now.seq < since.seq:
        return None
    if now.seq == since.seq:
        return []
    items = db.items(
        {
            "TableName": db.table(),
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :a AND :b",
            "ExpressionAttributeValues": {
                ":pk": s(space.pk),
                ":a": s(space.sk(change_sk(since.seq + 1))),
                ":b": s(space.sk(change_sk(now.seq))),
            },
            "ConsistentRead": True,
        }
    )
    entries = list(items)
    if len(entries) != now.seq - since.seq:
        return None
    ids: dict[str, None] = {}
    for entry in entries:
        ids.update(dict.fromkeys(v["S"] for v in entry["ids"]["L"]))
    return list(ids)


__all__ = ["CHANGE", "CHANGE_LOG_DAYS", "Version", "changed_ids", "read", "step", "transact"]
