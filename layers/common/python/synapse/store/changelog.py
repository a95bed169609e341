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
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from synapse.store import db
from synapse.store.codec import n, s
from synapse.store.keys import CHANGE, VERSION_TOKEN, Space, change_sk

CHANGE_LOG_DAYS = 7  # a container further behind than this reads its mind again (never in practice)
# the version item also carries the last few entries (small ones): a reader one or two writes behind,
# the chat flow's case, learns the ids from the GetItem it makes anyway, without the log's Query; kept
# small so that the item stays under 1 KB
RECENT = 3
RECENT_MAX_IDS = 5
CANCELLED = "TransactionCanceledException"


@dataclass(frozen=True)
class Version:
    """Where a mind's memories stand: `seq` writes into the epoch `epoch` ("" before any write)."""

    epoch: str = ""
    seq: int = 0
    # (seq, ids) of the latest writes of at most RECENT_MAX_IDS ids, oldest first (not compared)
    recent: tuple[tuple[int, tuple[str, ...]], ...] = field(default=(), compare=False)

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
    recent = tuple(
        (int(e["M"]["s"]["N"]), tuple(v["S"] for v in e["M"]["ids"]["L"]))
        for e in item.get("recent", {}).get("L", [])
    )
    return Version(epoch=str(item["epoch"]["S"]), seq=int(item["seq"]["N"]), recent=recent)


def step(space: Space, read_as: Version, ids: Sequence[str]) -> list[dict[str, Any]]:
    """The two actions a write of `ids` adds to its transaction: the next seq (conditional on the one
    read) and its log entry."""
    nxt = read_as.seq + 1
    # a new version item (none yet, or a first-release token) starts a new epoch
    epoch = read_as.epoch if read_as.seq > 0 else uuid.uuid4().hex
    unique = list(dict.fromkeys(ids))
    recent = list(read_as.recent) if read_as.seq > 0 else []
    if len(unique) <= RECENT_MAX_IDS:
        recent.append((nxt, tuple(unique)))
    else:
        recent = []  # (a gap would hide this write from readers of `recent`: they read the log)
    kept = {
        "L": [{"M": {"s": n(seq), "ids": {"L": [s(i) for i in entry]}}} for seq, entry in recent[-RECENT:]]
    }
    update: dict[str, Any] = {
        "TableName": db.table(),
        "Key": db.key(space.pk, space.sk(VERSION_TOKEN)),
        "UpdateExpression": "SET seq = :next, epoch = :epoch, recent = :recent REMOVE v",
        "ExpressionAttributeValues": {":next": n(nxt), ":epoch": s(epoch), ":recent": kept},
    }
    if read_as.seq > 0:
        update["ConditionExpression"] = "seq = :seq"
        update["ExpressionAttributeValues"][":seq"] = n(read_as.seq)
    else:
        update["ConditionExpression"] = "attribute_not_exists(seq)"
    entry = {
        **db.key(space.pk, space.sk(change_sk(nxt))),
        "ids": {"L": [s(i) for i in unique]},
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


def changes(space: Space, since: Version, now: Version) -> list[tuple[int, tuple[str, ...]]] | None:
    """The writes between two versions of one epoch, oldest first: (seq, the ids it changed); None
    when the log cannot tell (another epoch, or entries gone): read everything again."""
    if since.epoch != now.epoch or now.seq < since.seq:
        return None
    if now.seq == since.seq:
        return []
    wanted = range(since.seq + 1, now.seq + 1)
    known = {seq: entry for seq, entry in now.recent}
    if all(seq in known for seq in wanted):
        return [(seq, known[seq]) for seq in wanted]
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
    return [
        (seq, tuple(v["S"] for v in entry["ids"]["L"])) for seq, entry in zip(wanted, entries, strict=True)
    ]


def changed_ids(space: Space, since: Version, now: Version) -> list[str] | None:
    """The ids written between two versions of one epoch, oldest change first; None when the log
    cannot tell (another epoch, or entries gone): read everything again."""
    found = changes(space, since, now)
    return None if found is None else ids_of(found)


def ids_of(found: list[tuple[int, tuple[str, ...]]], after: int = 0) -> list[str]:
    """The ids of the writes past seq `after`, each once, oldest change first."""
    return list(dict.fromkeys(i for seq, ids in found if seq > after for i in ids))


__all__ = [
    "CHANGE",
    "CHANGE_LOG_DAYS",
    "Version",
    "changed_ids",
    "changes",
    "ids_of",
    "read",
    "step",
    "transact",
]
