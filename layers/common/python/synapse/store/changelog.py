"""The change log of a mind: how a container's copy of its memories catches up by reading only what
changed since it last looked, and the source of the mind's events and of its pull feed.

The version item (`ver`) holds (epoch, seq). `seq` numbers the writes of the mind's memories: each
write takes the next number in the same transaction as the memories it changes, conditional on the
number it read, so the numbers have no gaps and follow commit order; and it logs `chg:<seq>` with the
ids it changed (deleted ones included), kept CHANGE_LOG_DAYS. A reader at seq `s` that finds `t` reads
the log entries s+1..t and then those memories only. `epoch` is drawn anew whenever the version item
is made again (a user's or a mind's data deleted, or a first-release token): a reader of another epoch,
or one whose entries have expired, reads everything again.

An entry also says what changed (`Change`): per memory, the history's word (created, updated,
verified, restored, and what Review adds: accepted, superseded, consolidated) or `deleted`, and the
version the change made; and the changes that are not a memory's but must become events of their own:
`summary.created` (a session's summary chunk), `mind.deleted` (the last entry of a deleted mind) and
`proposal.created` (Review's hook). DynamoDB Streams carry each new entry to the change-events function
(services/memory/changes.py), which puts one event per change on MemoryBus; `GET /memory/changes` reads
the entries back. Nothing publishes an event by hand: a write that did not commit logged nothing.

Entry attributes (small: the version item's `recent` keeps its bounds, the entry its memory ids once):
`ids` (memory ids, the catch-up's), `ch` and `vs` (each id's change and version, aligned with `ids`),
`ev` (the other changes, when any: `{k, s?, c?, p?, i?}`), `at` (when written), `log_seq` (the seq: the
stream's filter picks entries by it), `ttl`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from synapse.core.errors import Gone
from synapse.core.models.base import iso, parse_iso, utcnow
from synapse.store import db
from synapse.store.codec import n, s
from synapse.store.keys import CHANGE, VERSION_TOKEN, Space, change_sk, parse_sk, user_of

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
    # how many memories the mind holds (the quota's counter, moved by the steps of creates and
    # deletes); None: not counted yet (a mind written before the counter, or none written)
    memories: int | None = field(default=None, compare=False)

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
    counted = int(item["mems"]["N"]) if "mems" in item else None
    return Version(epoch=str(item["epoch"]["S"]), seq=int(item["seq"]["N"]), recent=recent, memories=counted)


# the changes that are not a memory's (their kind names their event: a dot, never a history word)
SUMMARY_CREATED = "summary.created"
MIND_DELETED = "mind.deleted"
PROPOSAL_CREATED = "proposal.created"
DELETED = "deleted"  # a memory's deletion (not a history word: a deleted memory has no history)


@dataclass(frozen=True)
class Change:
    """One thing a write changed, as its log entry keeps it and its event tells it.

    A memory's change has `memory_id`, `kind` (the history's word, or `deleted`; the list is open) and
    `version` (the version the change made; a deletion's: the version deleted). Another change has its
    event's type as `kind` and what that event names."""

    kind: str
    memory_id: str | None = None
    version: int | None = None
    session_id: str | None = None
    chunk_id: str | None = None
    proposal_id: str | None = None

    @property
    def of_memory(self) -> bool:
        return "." not in self.kind

    @classmethod
    def memory(cls, memory_id: str, kind: str, version: int) -> Change:
        return cls(kind=kind, memory_id=memory_id, version=version)

    @classmethod
    def summary(cls, session_id: str, chunk_id: str) -> Change:
        return cls(kind=SUMMARY_CREATED, session_id=session_id, chunk_id=chunk_id)

    @classmethod
    def mind_deleted(cls) -> Change:
        return cls(kind=MIND_DELETED)

    @classmethod
    def proposal(cls, proposal_id: str, memory_id: str) -> Change:
        """Review's hook: a proposal recorded in a write's transaction (`proposal.created`)."""
        return cls(kind=PROPOSAL_CREATED, proposal_id=proposal_id, memory_id=memory_id)


@dataclass(frozen=True)
class Entry:
    """One log entry, read back: its seq, when it was written, what it changed (memories first, in
    the order written), and when it expires (epoch seconds)."""

    seq: int
    at: datetime
    changes: tuple[Change, ...]
    expires: int

    def memory_changes(self) -> list[Change]:
        return [c for c in self.changes if c.of_memory]


_OTHER_FIELDS = (("s", "session_id"), ("c", "chunk_id"), ("p", "proposal_id"), ("i", "memory_id"))


def _encode(changes: Sequence[Change]) -> dict[str, Any]:
    """The attributes that say what an entry changed (a memory changed twice in one write: its last)."""
    mine: dict[str, Change] = {}
    for change in changes:
        if change.of_memory:
            if change.memory_id is None or change.version is None:
                raise ValueError(f"a memory's change needs its id and version: {change}")
            mine.pop(change.memory_id, None)
            mine[change.memory_id] = change
    out: dict[str, Any] = {
        "ids": {"L": [s(i) for i in mine]},
        "ch": {"L": [s(c.kind) for c in mine.values()]},
        "vs": {"L": [n(c.version or 0) for c in mine.values()]},
    }
    others = [c for c in changes if not c.of_memory]
    if others:
        out["ev"] = {
            "L": [
                {
                    "M": {
                        "k": s(c.kind),
                        **{short: s(getattr(c, name)) for short, name in _OTHER_FIELDS if getattr(c, name)},
                    }
                }
                for c in others
            ]
        }
    return out


def decode(item: Mapping[str, Any]) -> Entry:
    """A raw entry (as a Query or a stream record's image has it) → Entry. Entries written before
    entries said what changed (kept CHANGE_LOG_DAYS after the upgrade) give `unknown` changes with
    version 0, and their `at` from their ttl."""
    seq = int(item["log_seq"]["N"]) if "log_seq" in item else parse_sk(item["sk"]["S"]).seq
    expires = int(item["ttl"]["N"]) if "ttl" in item else 0
    ids = [v["S"] for v in item.get("ids", {}).get("L", [])]
    kinds = [v["S"] for v in item.get("ch", {}).get("L", [])] or ["unknown"] * len(ids)
    versions = [int(v["N"]) for v in item.get("vs", {}).get("L", [])] or [0] * len(ids)
    changes = [Change.memory(i, k, v) for i, k, v in zip(ids, kinds, versions, strict=True)]
    for raw in item.get("ev", {}).get("L", []):
        said = {name: raw["M"][short]["S"] for short, name in _OTHER_FIELDS if short in raw["M"]}
        changes.append(
            Change(
                kind=raw["M"]["k"]["S"],
                memory_id=said.get("memory_id"),
                session_id=said.get("session_id"),
                chunk_id=said.get("chunk_id"),
                proposal_id=said.get("proposal_id"),
            )
        )
    if "at" in item:
        at = parse_iso(item["at"]["S"])
    else:
        at = datetime.fromtimestamp(max(0, expires - CHANGE_LOG_DAYS * 86400), UTC)
    return Entry(seq=seq, at=at, changes=tuple(changes), expires=expires)


def from_stream(keys: Mapping[str, Any], image: Mapping[str, Any]) -> tuple[Space, Entry]:
    """A stream record of a new entry (its Keys and NewImage) → the mind it belongs to, and the
    entry. ValueError for a record of any other item."""
    key = parse_sk(str(keys["sk"]["S"]))
    if key.kind != "change":
        raise ValueError("not a change-log entry")
    return Space(user_of(str(keys["pk"]["S"])), key.mind_id), decode({**image, **keys})


def step(
    space: Space, read_as: Version, changes: Sequence[Change], *, memories: int | None = None
) -> list[dict[str, Any]]:
    """The two actions a write adds to its transaction: the next seq (conditional on the one read)
    and its log entry, which says what the write changed (`changes`). `memories`: the mind's count
    of memories after the write (a write that creates or deletes some); None leaves it as it is.
    The condition on the seq read also makes the count exact: it moves only with the seq."""
    nxt = read_as.seq + 1
    # a new version item (none yet, or a first-release token) starts a new epoch
    epoch = read_as.epoch if read_as.seq > 0 else uuid.uuid4().hex
    said = _encode(changes)
    unique = [v["S"] for v in said["ids"]["L"]]
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
    if memories is not None:
        update["UpdateExpression"] = update["UpdateExpression"].replace(" REMOVE", ", mems = :mems REMOVE")
        update["ExpressionAttributeValues"][":mems"] = n(max(0, memories))
    if read_as.seq > 0:
        update["ConditionExpression"] = "seq = :seq"
        update["ExpressionAttributeValues"][":seq"] = n(read_as.seq)
    else:
        update["ConditionExpression"] = "attribute_not_exists(seq)"
    entry = {
        **db.key(space.pk, space.sk(change_sk(nxt))),
        **said,
        "at": s(iso(utcnow())),
        "log_seq": n(nxt),
        "ttl": n(int(time.time()) + CHANGE_LOG_DAYS * 86400),
    }
    return [{"Update": update}, {"Put": {"TableName": db.table(), "Item": entry}}]


def commit(space: Space, changes: Sequence[Change], *, attempts: int = 40) -> None:
    """A transaction of the version step alone (a change that writes nothing else in the mind, e.g. a
    mind's deletion announcing itself), retried while other writes of the mind take the number."""
    for attempt in range(attempts):
        if transact(step(space, read(space), changes)) is None:
            return
        db.backoff(min(attempt, 4))
    raise db.busy()


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


def ids_of(found: list[tuple[int, tuple[str, ...]]], past: int = 0) -> list[str]:
    """The ids of the writes past seq `past`, each once, oldest change first."""
    return list(dict.fromkeys(i for seq, ids in found if seq > past for i in ids))


# --- consolidation's marks (Review): which minds were written to since their last consolidation ---


def written_since_consolidation() -> Iterator[tuple[Space, int]]:
    """Every mind whose version moved since it was last consolidated (or never was), with its seq.
    A Scan of the version items (a daily job's read: the table's other items are filtered out)."""
    query: dict[str, Any] = {
        "TableName": db.table(),
        "FilterExpression": (
            "attribute_exists(epoch) AND attribute_exists(seq) AND "
            "(attribute_not_exists(consolidated_seq) OR seq <> consolidated_seq)"
        ),
        "ProjectionExpression": "pk, sk, seq",
    }
    while True:
        with db.translate():
            page = db.client().scan(**query)
        for item in page.get("Items", []):
            key = parse_sk(item["sk"]["S"])
            if key.kind == "version":
                yield Space(user_of(item["pk"]["S"]), key.mind_id), int(item["seq"]["N"])
        if "LastEvaluatedKey" not in page:
            return
        query["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def mark_consolidated(space: Space, seq: int) -> None:
    """Remember that the mind was consolidated as of `seq` (a write after it makes it due again)."""
    try:
        with db.translate():
            db.client().update_item(
                TableName=db.table(),
                Key=db.key(space.pk, space.sk(VERSION_TOKEN)),
                UpdateExpression="SET consolidated_seq = :s",
                ConditionExpression="attribute_exists(seq)",
                ExpressionAttributeValues={":s": n(seq)},
            )
    except ClientError as exc:
        if not db.is_condition_failure(exc):
            raise  # (a mind deleted meanwhile has no version item to mark)


GONE = (
    f"That position is no longer kept (changes are kept {CHANGE_LOG_DAYS} days): "
    "read the memories again, then follow the feed from the newest position."
)


@dataclass(frozen=True)
class Page:
    entries: list[Entry]
    next_after: int


def after(space: Space, position: int, rows: int) -> Page:
    """The entries after `position`, oldest first, holding at most `rows` memory changes (an entry is
    never split: one larger than `rows` comes alone). `next_after` is the last seq read (past entries
    with no memory change too). Position 0 starts at the oldest entry kept. Gone when entry
    `position + 1` is no longer kept (absent, or past its ttl: DynamoDB deletes expired items late), or
    when `position` is past the mind's seq (a position of an earlier epoch: the data was deleted)."""
    now = read(space)
    if position > now.seq:
        raise Gone(GONE)
    if position == now.seq:
        return Page([], position)
    query = {
        "TableName": db.table(),
        "KeyConditionExpression": "pk = :pk AND sk BETWEEN :a AND :b",
        "ExpressionAttributeValues": {
            ":pk": s(space.pk),
            ":a": s(space.sk(change_sk(position + 1))),
            ":b": s(space.sk(change_sk(now.seq))),
        },
        "ConsistentRead": True,
        "Limit": min(max(rows, 1) + 1, 1000),
    }
    clock = int(time.time())
    entries: list[Entry] = []
    count, last, first = 0, position, True
    for item in db.items(query):
        entry = decode(item)
        if first:  # expiry follows seq: the first entry read decides
            if entry.expires and entry.expires <= clock:
                if position > 0:
                    raise Gone(GONE)
                continue  # from the oldest kept
            if position > 0 and entry.seq != position + 1:
                raise Gone(GONE)
            first = False
        size = len(entry.memory_changes())
        if entries and count + size > rows:
            break
        entries.append(entry)
        count, last = count + size, entry.seq
        if count >= rows:
            break
    if first and position > 0:
        raise Gone(GONE)  # entries position+1..seq should be there, and none is
    return Page(entries, last)


__all__ = [
    "CHANGE",
    "CHANGE_LOG_DAYS",
    "Change",
    "Entry",
    "Page",
    "Version",
    "after",
    "changed_ids",
    "changes",
    "commit",
    "decode",
    "from_stream",
    "ids_of",
    "mark_consolidated",
    "read",
    "step",
    "transact",
    "written_since_consolidation",
]
