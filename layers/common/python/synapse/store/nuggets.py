"""Memories (nuggets): the one codec (item ↔ `Memory`), the one write path, the reads.

A memory is the item `pk = mem:<userId>`, `sk = [<mindId>:]nug:<uuid>`; its revision `rev` is the
memory's `version` (1 when created, +1 on every change). Every write goes through `save`: conditional
on the revision the writer read, so two writers never silently overwrite each other (the loser reads
again), and in the same transaction the version it replaces is kept as `[<mindId>:]hist:<uuid>:<v>`
(outside the recall prefix: a recall never reads versions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from itertools import repeat
from operator import itemgetter
from typing import Any

from botocore.exceptions import ClientError

from synapse.core.config import settings
from synapse.core.errors import NotFound, QuotaExceeded
from synapse.core.models.base import PRIORITY_RANK, Category, Priority, Source, iso, parse_iso
from synapse.core.models.base import Change as ChangeKind
from synapse.core.models.memory import Memory, MemoryVersion
from synapse.store import changelog as log
from synapse.store import db
from synapse.store.codec import BadCursor, Vector, attr, decode_cursor, encode_cursor, n, plain, plain_item, s
from synapse.store.keys import (
    HISTORY,
    NUGGET,
    TIMELINE_INDEX,
    TIMELINE_PK,
    TIMELINE_SK,
    Space,
    history_prefix,
    history_sk,
    is_service_id,
    memory_id,
    nugget_id,
    nugget_sk,
    parse_sk,
    timeline_id,
    timeline_pk,
    timeline_sk,
    user_of,
)

# The attributes a memory answer needs (the vector stays behind: it is most of the item's bytes;
# DynamoDB charges the whole item's size whatever the projection, but the answer is smaller)
_ATTRS = (
    "sk, category, #k, content, tags, priority, #src, verified, confidence, "
    "expires_at, session_id, created_at, updated_at, valid_at, superseded_by, #rev, #chg"
)
_NAMES = {"#k": "key", "#src": "source", "#rev": "rev", "#chg": "change"}
HISTORY_KEPT = 50  # versions kept per memory besides the current one (older ones are deleted)
NO_MEMORY = "No memory with that id."
WRITE_ATTEMPTS = 8  # reads and conditional writes of one memory before a writer gives up (a hot key)
# tries of one transaction that lost only the mind's version number to other writes of the mind: each
# loss means another write went through, so writers of one busy mind take turns, not fail
VERSION_ATTEMPTS = 40


@dataclass(frozen=True)
class Stored:
    """A memory as read, with the revision a write must name to replace it."""

    memory: Memory
    rev: int | None  # None: an item written before revisions were counted
    change: ChangeKind = ChangeKind.created  # what made this version


# --- the codec --------------------------------------------------------------------------------------


def _id_of(sk: str) -> str:
    """The memory id in a nugget's sort key, of any mind (`nug:<id>`, `<mindId>:nug:<id>`)."""
    return nugget_id(NUGGET + sk.rpartition(NUGGET)[2])


def from_item(space: Space, item: Mapping[str, Any]) -> Stored:
    """A raw nugget item (as DynamoDB returns it) → the memory and its revision."""
    raw = plain_item(item)
    memory = Memory(
        id=_id_of(raw["sk"]),
        category=Category(raw["category"]),
        key=raw["key"],
        content=raw["content"],
        tags=raw.get("tags", []),
        priority=Priority(raw.get("priority", "normal")),
        source=Source(raw["source"]),
        verified=bool(raw.get("verified", False)),
        confidence=float(raw.get("confidence", 1.0)),
        expires_at=parse_iso(raw["expires_at"]) if raw.get("expires_at") else None,
        user_id=space.user_id,
        session_id=raw.get("session_id"),
        created_at=parse_iso(raw["created_at"]),
        updated_at=parse_iso(raw["updated_at"]),
        version=int(raw.get("rev") or 1),
        mind_id=space.mind_id,
        valid_at=parse_iso(raw["valid_at"]) if raw.get("valid_at") else None,
        superseded_by=raw.get("superseded_by"),
    )
    rev = raw.get("rev")
    change = raw.get("change") or (ChangeKind.created if memory.version == 1 else ChangeKind.updated)
    return Stored(memory=memory, rev=int(rev) if rev is not None else None, change=ChangeKind(change))


def _attributes(memory: Memory) -> dict[str, Any]:
    """The stored attributes of a memory (None: not stored, removed on update)."""
    return {
        "category": memory.category.value,
        "key": memory.key,
        "content": memory.content,
        "tags": list(memory.tags),
        "priority": memory.priority.value,
        "source": memory.source.value,
        "verified": memory.verified,
        "confidence": memory.confidence,
        "expires_at": iso(memory.expires_at) if memory.expires_at is not None else None,
        "session_id": memory.session_id,
        "created_at": iso(memory.created_at),
        "updated_at": iso(memory.updated_at),
        "valid_at": iso(memory.valid_at) if memory.valid_at is not None else None,
        "superseded_by": memory.superseded_by,
    }


# --- writes -----------------------------------------------------------------------------------------


def next_version(read: Stored | None) -> int:
    """The version a write makes of what it read."""
    return read.memory.version + 1 if read is not None else 1


@dataclass(frozen=True)
class Write:
    """One memory to store: the whole memory as it is to be (its `version` is `next_version(read)`),
    a new vector (None keeps the stored one), the read it replaces (None: it must not exist yet), and
    what kind of change it is. A create is the memory's `version` (1, or an imported memory's own,
    its history written beside it)."""

    memory: Memory
    read: Stored | None
    vector: Vector | None = None
    kind: ChangeKind = ChangeKind.updated

    @property
    def rev(self) -> int:
        return self.memory.version if self.read is None else next_version(self.read)


def _version_item(space: Space, old: Stored) -> dict[str, Any]:
    """The kept copy of a version a write replaces (no vector: history is read, never scored)."""
    return history_item(space, old.memory.id, as_version(old))


def history_item(space: Space, mem_id: str, v: MemoryVersion) -> dict[str, Any]:
    """A kept version's item (a write's replaced version, or an imported memory's history)."""
    attributes = {
        "version": v.version,
        "content": v.content,
        "tags": list(v.tags),
        "priority": v.priority.value,
        "source": v.source.value,
        "verified": v.verified,
        "confidence": v.confidence,
        "expires_at": iso(v.expires_at) if v.expires_at is not None else None,
        "updated_at": iso(v.updated_at),
        "change": v.change.value,
        "valid_at": iso(v.valid_at) if v.valid_at is not None else None,
    }
    return {
        **db.key(space.pk, space.sk(history_sk(mem_id, v.version))),
        **{k: attr(val) for k, val in attributes.items() if val is not None},
    }


def _actions(space: Space, change: Write) -> list[dict[str, Any]]:
    """A change's transaction actions: the conditional update, and the kept copy of what it replaces
    (with the copy that falls out of the kept window deleted)."""
    if change.read is None:  # a create: the whole item, on condition that there is none
        return [{"Put": _put(space, change)}]
    actions: list[dict[str, Any]] = [{"Update": _update(space, change)}]
    if change.read is not None:
        actions.append({"Put": {"TableName": db.table(), "Item": _version_item(space, change.read)}})
        expired = change.read.memory.version - HISTORY_KEPT
        if expired >= 1:
            key = db.key(space.pk, space.sk(history_sk(change.memory.id, expired)))
            actions.append({"Delete": {"TableName": db.table(), "Key": key}})
    return actions


def _put(space: Space, change: Write) -> dict[str, Any]:
    """The PutItem of a create (what `_update` would set, as one item: cheaper to apply than an
    update expression of every attribute)."""
    item: dict[str, Any] = {
        **db.key(space.pk, space.sk(nugget_sk(change.memory.id))),
        "rev": n(change.rev),
        "change": s(change.kind.value),
        **{name: attr(value) for name, value in _attributes(change.memory).items() if value is not None},
        # its place in the timeline index, as `_update` sets it
        TIMELINE_PK: s(timeline_pk(space)),
        TIMELINE_SK: s(timeline_sk(iso(change.memory.when), change.memory.id)),
    }
    if change.vector is not None:
        vec = change.vector
        item.update({"emb": {"B": vec.data}, "emb_model": s(vec.model), "emb_dim": n(vec.dim)})
    return {"TableName": db.table(), "Item": item, "ConditionExpression": "attribute_not_exists(sk)"}


def _update(space: Space, change: Write) -> dict[str, Any]:
    """The UpdateItem of a change, conditional on the revision read."""
    names: dict[str, str] = {"#rev": "rev"}
    values: dict[str, Any] = {":rev": n(change.rev)}
    sets, removes = ["#rev = :rev", "#chg = :chg"], []
    names["#chg"] = "change"
    values[":chg"] = s(change.kind.value)
    for i, (name, value) in enumerate(_attributes(change.memory).items()):
        names[f"#a{i}"] = name
        if value is None:
            removes.append(f"#a{i}")
        else:
            values[f":a{i}"] = attr(value)
            sets.append(f"#a{i} = :a{i}")
    # the memory's place in the timeline index (unchanged keys cost the index no write)
    names.update({"#tlp": TIMELINE_PK, "#tls": TIMELINE_SK})
    values[":tlp"] = s(timeline_pk(space))
    values[":tls"] = s(timeline_sk(iso(change.memory.when), change.memory.id))
    sets += ["#tlp = :tlp", "#tls = :tls"]
    if change.vector is not None:
        vec = change.vector
        values.update({":emb": {"B": vec.data}, ":embm": s(vec.model), ":embd": n(vec.dim)})
        sets += ["emb = :emb", "emb_model = :embm", "emb_dim = :embd"]
    if change.read is None:
        condition = "attribute_not_exists(sk)"
    elif change.read.rev is None:
        condition = "attribute_exists(sk) AND attribute_not_exists(#rev)"
    else:
        condition, values[":read"] = "#rev = :read", n(change.read.rev)
    return {
        "TableName": db.table(),
        "Key": db.key(space.pk, space.sk(nugget_sk(change.memory.id))),
        "UpdateExpression": "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else ""),
        "ConditionExpression": condition,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }


class LostRace(Exception):
    """Another write changed a memory since it was read: read it again and redo the change."""

    def __init__(self, ids: Sequence[str]) -> None:
        super().__init__("stale read")
        self.ids = list(ids)


_MAX_ACTIONS = 100 - 2  # a transaction's limit, less the version step and its log entry


def save(space: Space, changes: Sequence[Write]) -> None:
    """Store changes, each conditional on the revision its writer read, with the mind's next version
    and its change-log entry in the same transaction (`changes.step`).

    A change that replaces a version keeps it in the same transaction; changes go together in
    transactions of at most 100 actions (each all or nothing). LostRace names the memories of a
    transaction another writer changed meanwhile (nothing of it was written); the caller reads them
    again. A transaction that lost only the version number (another write of the mind came first)
    takes the next one.
    """
    lost: list[str] = []
    part: list[Write] = []
    actions: list[list[dict[str, Any]]] = []
    for change in [*changes, None]:
        more = _actions(space, change) if change is not None else []
        if part and (change is None or sum(map(len, actions)) + len(more) > _MAX_ACTIONS):
            lost += _commit(space, part, actions)
            part, actions = [], []
        if change is not None:
            part.append(change)
            actions.append(more)
    if lost:
        raise LostRace(lost)


def _commit(space: Space, part: list[Write], actions: list[list[dict[str, Any]]]) -> list[str]:
    """One transaction of changes and the version step; returns the ids whose revision lost."""
    flat = [a for acts in actions for a in acts]
    said = [log.Change.memory(c.memory.id, c.kind.value, c.rev) for c in part]
    created = sum(1 for c in part if c.read is None)
    for attempt in range(VERSION_ATTEMPTS):
        version = log.read(space)
        counted = _counted(space, version, created) if created else None
        failed = log.transact(flat + log.step(space, version, said, memories=counted))
        if failed is None:
            return []
        # each change's first action is its conditional update
        starts = [sum(map(len, actions[:i])) for i in range(len(part))]
        lost = [c.memory.id for c, at in zip(part, starts, strict=True) if at < len(failed) and failed[at]]
        if lost:
            return lost
        db.backoff(min(attempt, 4))  # (a short wait: the number is free again within a request's time)
    raise db.busy()


# --- batches: many memories, one turn of the mind's version number ----------------------------------

Planned = list[tuple[Write, list[dict[str, Any]]]]  # changes with their transaction actions


def save_batch(space: Space, changes: Sequence[Write]) -> list[str]:
    """Store many changes (at most one per memory) with ONE turn of the mind's version number, however
    many transactions their actions need; returns the ids whose revision lost (nothing of them written:
    their writer reads them again), where `save` would raise LostRace.

    A transaction holds at most 100 actions: a create is 1, an update 2 or 3 (its kept version, and
    the one falling out of the window). The changes past what one transaction holds beside the
    version step go first, in transactions of up to 100 actions with no step; the last transaction
    holds the rest, the step and the one log entry naming every change of the batch. Readers are
    safe in that order: a reader who sees the early memories before the step sees the step later
    and reads them again; nothing is announced that is not written. A batch of 100 creates is two
    transactions, one turn. The count (quota) moves by the creates written, in the last step.
    """
    planned: Planned = [(c, _actions(space, c)) for c in changes]
    last: Planned = []
    size = 0
    while planned and size + len(planned[-1][1]) <= _MAX_ACTIONS:
        size += len(planned[-1][1])
        last.insert(0, planned.pop())
    written: list[Write] = []
    lost: list[str] = []
    while planned:  # the early part, in transactions of up to 100 actions
        early: Planned = []
        while planned and sum(len(a) for _, a in early) + len(planned[0][1]) <= 100:
            early.append(planned.pop(0))
        done, missed = _transact_part(space, early, lambda _: [])
        written += done
        lost += missed
    # (every change of the last part lost: the step names the early part's alone)
    _, missed = _transact_part(
        space, last, lambda final: _batch_step(space, written, final), alone=bool(written)
    )
    return lost + missed


def _batch_step(space: Space, early: list[Write], last: list[Write]) -> list[dict[str, Any]]:
    """The version step of a batch: one log entry naming every change, the count moved by its creates."""
    every = [*early, *last]
    said = [log.Change.memory(c.memory.id, c.kind.value, c.rev) for c in every]
    version = log.read(space)
    created = sum(1 for c in every if c.read is None)
    return log.step(space, version, said, memories=count(space, version) + created if created else None)


def _transact_part(
    space: Space,
    part: Planned,
    extra: Callable[[list[Write]], list[dict[str, Any]]],
    *,
    alone: bool = False,
) -> tuple[list[Write], list[str]]:
    """One transaction of changes (and `extra(their writes)`, made anew at every try): returns the
    changes written and the ids that lost their revision (taken out before trying again). `alone`: the
    extra actions are written even with no change (a step naming an earlier part's changes)."""
    lost: list[str] = []
    for attempt in range(VERSION_ATTEMPTS):
        if not part and not alone:
            return [], lost
        writes = [c for c, _ in part]
        flat = [a for _, acts in part for a in acts]
        failed = log.transact(flat + extra(writes))
        if failed is None:
            return writes, lost
        starts = [sum(len(a) for _, a in part[:i]) for i in range(len(part))]
        out = {i for i, at in enumerate(starts) if at < len(failed) and failed[at]}
        if out:
            lost += [part[i][0].memory.id for i in sorted(out)]
            part = [p for i, p in enumerate(part) if i not in out]
            continue
        db.backoff(min(attempt, 4))
    raise db.busy()


# --- the quota: the mind's count of memories, kept on its version item -------------------------------

QUOTA = "This mind holds {limit} memories, its limit (MAX_MEMORIES_PER_MIND): delete some first."


def quota() -> int:
    return settings().max_memories_per_mind


def count(space: Space, version: log.Version | None = None) -> int:
    """How many memories a mind holds: the version item's counter, else (a mind written before the
    counter) a consistent count query, once: the next write stores it."""
    version = version if version is not None else log.read(space)
    if version.memories is not None:
        return version.memories
    total = 0
    query: dict[str, Any] = {
        "TableName": db.table(),
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :pre)",
        "ExpressionAttributeValues": {":pk": s(space.pk), ":pre": s(space.sk(NUGGET))},
        "Select": "COUNT",
        "ConsistentRead": True,
    }
    while True:
        with db.translate():
            page = db.client().query(**query)
        total += int(page.get("Count", 0))
        if "LastEvaluatedKey" not in page:
            return total
        query["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def room(space: Space, version: log.Version | None = None) -> int:
    """How many memories the mind may still create."""
    return max(0, quota() - count(space, version))


def _counted(space: Space, version: log.Version, created: int) -> int:
    """The count after a write that creates `created` memories; QuotaExceeded past the limit."""
    now = count(space, version)
    if now + created > quota():
        raise QuotaExceeded(QUOTA.format(limit=quota()))
    return now + created


def delete(space: Space, mem_id: str, *, expect: Stored | None = None) -> Category:
    """Delete a memory and its history (deleted means gone); returns its category. NotFound if it
    does not exist. The history goes first: a version left behind could be taken for one of a later
    memory of the same key. The deletion takes the mind's next version, like any write.

    `expect`: delete only the version read (LostRace if another write came in between); then the
    memory goes first and its history after, so that a lost race leaves the history whole."""
    if not is_service_id(mem_id):
        raise NotFound(NO_MEMORY)
    found = expect or get(space, mem_id)
    if found is None:
        raise NotFound(NO_MEMORY)

    def forget_history() -> None:
        kept = db.query_prefix(space.pk, space.sk(history_prefix(mem_id)), ProjectionExpression="pk, sk")
        db.batch_write([{"DeleteRequest": {"Key": {"pk": i["pk"], "sk": i["sk"]}}} for i in kept])

    if expect is None:
        forget_history()
    gone: dict[str, Any] = {
        "TableName": db.table(),
        "Key": db.key(space.pk, space.sk(nugget_sk(mem_id))),
        "ConditionExpression": "attribute_exists(sk)",
    }
    if expect is not None:
        gone["ExpressionAttributeNames"] = {"#rev": "rev"}
        if expect.rev is None:
            gone["ConditionExpression"] = "attribute_exists(sk) AND attribute_not_exists(#rev)"
        else:
            gone["ConditionExpression"] = "#rev = :read"
            gone["ExpressionAttributeValues"] = {":read": n(expect.rev)}
    for attempt in range(VERSION_ATTEMPTS):
        said = [log.Change.memory(mem_id, log.DELETED, found.memory.version)]
        version = log.read(space)
        step = log.step(space, version, said, memories=count(space, version) - 1)
        failed = log.transact([{"Delete": gone}, *step])
        if failed is None:
            if expect is not None:
                forget_history()
            return found.memory.category
        if failed and failed[0]:
            if expect is not None:
                raise LostRace([mem_id])
            raise NotFound(NO_MEMORY)
        db.backoff(min(attempt, 4))
    raise db.busy()


# --- reads ------------------------------------------------------------------------------------------


def version_from(raw: Mapping[str, Any]) -> MemoryVersion:
    return MemoryVersion(
        version=int(raw["version"]),
        content=raw["content"],
        tags=raw.get("tags", []),
        priority=Priority(raw.get("priority", "normal")),
        source=Source(raw["source"]),
        verified=bool(raw.get("verified", False)),
        confidence=float(raw.get("confidence", 1.0)),
        expires_at=parse_iso(raw["expires_at"]) if raw.get("expires_at") else None,
        updated_at=parse_iso(raw["updated_at"]),
        change=ChangeKind(raw.get("change", "updated")),
        valid_at=parse_iso(raw["valid_at"]) if raw.get("valid_at") else None,
    )


def as_version(current: Stored) -> MemoryVersion:
    """The current version of a memory, as a history entry."""
    m = current.memory
    return MemoryVersion(
        version=m.version,
        content=m.content,
        tags=m.tags,
        priority=m.priority,
        source=m.source,
        verified=m.verified,
        confidence=m.confidence,
        expires_at=m.expires_at,
        updated_at=m.updated_at,
        change=current.change,
        valid_at=m.valid_at,
    )


def history(space: Space, mem_id: str) -> list[MemoryVersion]:
    """The kept versions of a memory before its current one, newest first."""
    items = db.query_prefix(space.pk, space.sk(history_prefix(mem_id)), ScanIndexForward=False)
    return [version_from(plain_item(item)) for item in items]


# what `from_item` reads: the vector is left out of a read of every memory (the read units are the
# same, but 100k memories' vectors need not travel through the function that reads them)
_MEMORY_ATTRIBUTES = (
    "sk",
    "category",
    "key",
    "content",
    "tags",
    "priority",
    "source",
    "verified",
    "confidence",
    "expires_at",
    "session_id",
    "created_at",
    "updated_at",
    "rev",
    "valid_at",
    "superseded_by",
    "change",
)


def _projection() -> dict[str, Any]:
    names = {f"#p{i}": a for i, a in enumerate(_MEMORY_ATTRIBUTES)}
    return {"ProjectionExpression": ", ".join(names), "ExpressionAttributeNames": names}


def with_history(space: Space) -> Iterator[tuple[Memory, list[MemoryVersion]]]:
    """Every memory of a mind with its kept versions (newest first), in id order: the memories and
    the history read side by side, a page of each at a time, so that nothing holds a mind whole.
    Both come in id order (`nug:<id>`, `hist:<id>:<version>`; ids are uuids, of one length), so each
    memory's versions are the run of history items with its id; a deleted memory's kept versions
    (history without a memory) are passed over."""
    versions = db.query_prefix(space.pk, space.sk(HISTORY))

    def next_version() -> tuple[str, MemoryVersion] | None:
        item = next(versions, None)
        if item is None:
            return None
        parsed = plain_item(item)
        return parse_sk(parsed["sk"]).name, version_from(parsed)

    pending = next_version()
    for item in db.query_prefix(space.pk, space.sk(NUGGET), **_projection()):
        memory = from_item(space, item).memory
        kept: list[MemoryVersion] = []
        while pending is not None and pending[0] <= memory.id:
            if pending[0] == memory.id:
                kept.append(pending[1])
            pending = next_version()
        kept.reverse()  # stored oldest first
        yield memory, kept


def version_at(space: Space, mem_id: str, moment: datetime) -> MemoryVersion | None:
    """The kept version of a memory that was current at `moment`: the newest whose `updated_at` is not
    later (None: it is not kept any more, or there is none). One Query of the memory's history, newest
    first; it stops at the first page that holds the version."""
    items = db.query_prefix(
        space.pk,
        space.sk(history_prefix(mem_id)),
        ScanIndexForward=False,
        FilterExpression="updated_at <= :at",
        ExpressionAttributeValues={":at": s(iso(moment))},
    )
    for item in items:
        return version_from(plain_item(item))
    return None


def kept_version(space: Space, mem_id: str, version: int) -> MemoryVersion | None:
    item = db.get(space.pk, space.sk(history_sk(mem_id, version)))
    return version_from(plain_item(item)) if item else None


def id_for(space: Space, category: Category, key: str) -> str:
    return memory_id(space, category.value, key)


def get(space: Space, mem_id: str) -> Stored | None:
    """One memory (a consistent read: a writer names the revision it read); None if there is none."""
    if not is_service_id(mem_id):
        return None
    item = db.get(space.pk, space.sk(nugget_sk(mem_id)), _ATTRS, _NAMES)
    return from_item(space, item) if item else None


@dataclass(frozen=True)
class MemoryFilter:
    category: Category | None = None
    tag: str | None = None
    source: Source | None = None
    verified: bool | None = None
    live_at: datetime | None = None  # hide memories expired at this time, and superseded ones
    superseded: bool = False  # with live_at: show superseded memories too (GET /memory?include=superseded)
    expiring_before: datetime | None = None  # only memories with expires_at in (live_at, this]


def _filter_expression(f: MemoryFilter) -> tuple[str | None, dict[str, Any]]:
    parts: list[str] = []
    values: dict[str, Any] = {}
    if f.category is not None:
        parts.append("category = :cat")
        values[":cat"] = s(f.category.value)
    if f.tag is not None:
        parts.append("contains(tags, :tag)")
        values[":tag"] = s(f.tag)
    if f.source is not None:
        parts.append("#src = :src")
        values[":src"] = s(f.source.value)
    if f.verified is not None:
        parts.append("verified = :ver")
        values[":ver"] = {"BOOL": f.verified}
    if f.live_at is not None:
        # ISO timestamps of one fixed format compare correctly as strings
        parts.append("(attribute_not_exists(expires_at) OR expires_at > :live)")
        values[":live"] = s(iso(f.live_at))
        if not f.superseded:
            parts.append("attribute_not_exists(superseded_by)")
    if f.expiring_before is not None:
        parts.append("expires_at <= :before")
        values[":before"] = s(iso(f.expiring_before))
    return (" AND ".join(parts) or None), values


def _nuggets(
    space: Space,
    flt: MemoryFilter,
    *,
    start: str | None = None,
    projection: str = _ATTRS,
) -> Iterator[db.Item]:
    """Every nugget item of a mind matching `flt` (the prefix query), page by page."""
    expression, values = _filter_expression(flt)
    extra: dict[str, Any] = {
        "ProjectionExpression": projection,
        "ExpressionAttributeNames": _NAMES,
        "ExpressionAttributeValues": values,
    }
    if expression:
        extra["FilterExpression"] = expression
    if start:
        extra["ExclusiveStartKey"] = db.key(space.pk, start)
    yield from db.query_prefix(space.pk, space.sk(NUGGET), **extra)


def query(
    space: Space, flt: MemoryFilter, *, limit: int | None = None, cursor: str | None = None
) -> tuple[list[Memory], str | None]:
    """Memories of a mind matching `flt`, in key order, `limit` at most; returns (page, next cursor).
    BadCursor for a cursor this query did not make."""
    found: list[Memory] = []
    start = _list_position(space, cursor) if cursor else None
    for item in _nuggets(space, flt, start=start):
        found.append(from_item(space, item).memory)
        if limit is not None and len(found) == limit + 1:
            # one more than asked tells there is a next page, without an extra request
            found.pop()
            return found, encode_cursor({"sk": nugget_sk(found[-1].id)})
    return found, None


def stored_after(space: Space, flt: MemoryFilter, cursor: str | None) -> Iterator[tuple[Stored, str]]:
    """Memories of a mind matching `flt`, in key order, after `cursor` (one `query` made), each with
    the cursor that resumes after it; read page by page as they are taken. BadCursor as `query`."""
    start = _list_position(space, cursor) if cursor else None
    for item in _nuggets(space, flt, start=start):
        found = from_item(space, item)
        yield found, encode_cursor({"sk": nugget_sk(found.memory.id)})


def _list_position(space: Space, cursor: str) -> str:
    sk = decode_cursor(cursor).get("sk")
    if not isinstance(sk, str) or not sk.startswith(NUGGET):
        raise BadCursor
    return space.sk(sk)


def stored(space: Space, flt: MemoryFilter | None = None) -> list[Stored]:
    """Memories of a mind with their revisions (writers that change several at once need both; a
    revision read stale only makes the conditional write lose, and read again)."""
    return [from_item(space, item) for item in _nuggets(space, flt or MemoryFilter())]


# --- recall's read: columns, not models -------------------------------------------------------------


@dataclass
class Columns:
    """A mind's memories as columns, in id order (recall scores all of them; a model object per memory
    would cost more than the scoring). The fields before `embs` are the rows: `insert`, `remove`
    and `replace` change one row at a time. `embs` holds each stored vector's bytes as read (None:
    none stored), for a vector index to decode (search/vectors.py): it is not a row field, and a
    search corpus lets go of it once decoded."""

    ids: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    contents: list[str] = field(default_factory=list)
    tags: list[list[str]] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    verified: list[bool] = field(default_factory=list)
    priority: list[int] = field(default_factory=list)  # PRIORITY_RANK
    updated: list[float] = field(default_factory=list)  # epoch seconds
    expires: list[float] = field(default_factory=list)  # epoch seconds, inf when never
    valid: list[float] = field(default_factory=list)  # valid_at, epoch seconds; -inf when not known
    embs: list[bytes | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    def insert(self, pos: int, other: Columns, j: int) -> None:
        """Row `j` of `other` as a new row at `pos` (the rows from there on move down by one)."""
        for name in _ROW_FIELDS:
            getattr(self, name).insert(pos, getattr(other, name)[j])

    def remove(self, pos: int) -> None:
        """Take out the row at `pos` (the rows after it move up by one)."""
        for name in _ROW_FIELDS:
            del getattr(self, name)[pos]

    def replace(self, pos: int, other: Columns, j: int) -> None:
        """The row at `pos` becomes row `j` of `other`."""
        for name in _ROW_FIELDS:
            getattr(self, name)[pos] = getattr(other, name)[j]

    def take(self, rows: Sequence[int]) -> Columns:
        """Some rows, in the order given, as new columns (without vectors)."""
        out = Columns()
        for name in _ROW_FIELDS:
            values = getattr(self, name)
            setattr(out, name, [values[i] for i in rows])
        return out


_ROW_FIELDS = tuple(f.name for f in fields(Columns) if f.name != "embs")


_RANK = {p.value: r for p, r in PRIORITY_RANK.items()}


def vectors_of(items: Sequence[Mapping[str, Any]]) -> list[bytes | None]:
    """Each raw nugget item's stored vector bytes (None: none stored), in C-level passes: touching
    10k item dicts one by one in Python was half of a cold recall."""
    embs: list[Any] = list(map(dict.get, items, repeat("emb")))  # type: ignore[arg-type]
    if embs.count(None):
        return [e["B"] if e is not None else None for e in embs]
    return list(map(itemgetter("B"), embs))


def columns(items: Iterable[Mapping[str, Any]]) -> Columns:
    """Raw nugget items → columns, without a model object per memory."""
    items = list(items)
    out = Columns(embs=vectors_of(items))
    for item in items:
        out.ids.append(_id_of(item["sk"]["S"]))
        out.categories.append(item["category"]["S"])
        out.keys.append(item["key"]["S"])
        out.contents.append(item["content"]["S"])
        tags = item.get("tags")
        out.tags.append([v.get("S", "") for v in tags["L"]] if tags else [])
        out.created.append(item["created_at"]["S"])
        verified = item.get("verified")
        out.verified.append(bool(plain(verified)) if verified else False)
        priority = item.get("priority")
        out.priority.append(_RANK[priority["S"]] if priority else _RANK["normal"])
        out.updated.append(parse_iso(item["updated_at"]["S"]).timestamp())
        expires = item.get("expires_at")
        if "superseded_by" in item:
            out.expires.append(0.0)  # hidden from every live view, like a memory long expired
        else:
            out.expires.append(parse_iso(expires["S"]).timestamp() if expires else float("inf"))
        valid = item.get("valid_at")
        out.valid.append(parse_iso(valid["S"]).timestamp() if valid else float("-inf"))
    return out


def read_columns(space: Space) -> Columns:
    """Every memory of a mind, vectors included, as columns: what recall scores. Consistent: a
    recall cache built from this read is tagged with the version token read before it."""
    # the vector's model and size are in its own bytes (the tag): emb_model/emb_dim are not read
    items = db.query_prefix(
        space.pk,
        space.sk(NUGGET),
        ProjectionExpression=_ATTRS + ", emb",
        ExpressionAttributeNames=_NAMES,
        ConsistentRead=True,
    )
    return columns(items)


def _batch_get(
    space: Space, ids: Sequence[str], projection: str, *, consistent: bool = True
) -> list[db.Item]:
    """Some nugget items of a mind, in id order (BatchGetItem, 100 keys a call); an id with no memory
    is left out."""
    found: list[db.Item] = []
    keys = [db.key(space.pk, space.sk(nugget_sk(i))) for i in dict.fromkeys(ids)]
    for start in range(0, len(keys), 100):
        pending: dict[str, Any] = {
            db.table(): {
                "Keys": keys[start : start + 100],
                "ProjectionExpression": projection,
                "ExpressionAttributeNames": _NAMES,
                "ConsistentRead": consistent,
            }
        }
        attempt = 0
        while pending:
            with db.translate():
                answer = db.client().batch_get_item(RequestItems=pending)
            found += answer.get("Responses", {}).get(db.table(), [])
            pending = answer.get("UnprocessedKeys") or {}
            if pending:
                if attempt >= 8:
                    raise db.busy()
                db.backoff(attempt)
                attempt += 1
    found.sort(key=lambda item: item["sk"]["S"])
    return found


def read_columns_of(space: Space, ids: Sequence[str]) -> Columns:
    """Some memories of a mind, as `read_columns` reads them (vectors included), in id order; an id
    with no memory (deleted) is left out."""
    return columns(_batch_get(space, ids, _ATTRS + ", emb"))


def stored_of(space: Space, ids: Sequence[str]) -> dict[str, Stored]:
    """Some memories of a mind with their revisions, by id (the ones that exist)."""
    return {(st := from_item(space, item)).memory.id: st for item in _batch_get(space, ids, _ATTRS)}


# --- the timeline: memories in the order of their moment ----------------------------------------------


def timeline(
    space: Space,
    start: datetime | None,
    end: datetime | None,
    *,
    after: str | None,
    live_at: datetime,
    page_size: int,
) -> Iterator[tuple[str, Memory]]:
    """A mind's live memories whose moment (`valid_at`, else `created_at`) is in `[start, end)`, oldest
    first, each with its place in the timeline (a page's cursor), from just past the place `after`;
    `page_size` places are read at a time (what the caller means to take, so a page reads no more).

    It reads the timeline index (keys only, a few bytes a memory) a page at a time, then those
    memories by BatchGetItem: the read costs what the caller takes, not the mind's size. The index is
    eventually consistent, so what it names is checked again on the memory read: one deleted since is
    left out, one whose moment moved out of the range too. BadCursor for an `after` this did not make."""
    low = iso(start) if start is not None else "0"
    high = iso(end) if end is not None else "~"  # "~" sorts after every ISO timestamp
    query: dict[str, Any] = {
        "TableName": db.table(),
        "IndexName": TIMELINE_INDEX,
        "KeyConditionExpression": "#p = :p AND #s BETWEEN :lo AND :hi",
        "ExpressionAttributeNames": {"#p": TIMELINE_PK, "#s": TIMELINE_SK},
        "ExpressionAttributeValues": {":p": s(timeline_pk(space)), ":lo": s(low), ":hi": s(high)},
        "Limit": page_size,
    }
    if after is not None:
        mem_id = timeline_id(after)
        if not mem_id:
            raise BadCursor
        query["ExclusiveStartKey"] = {
            **db.key(space.pk, space.sk(nugget_sk(mem_id))),
            TIMELINE_PK: s(timeline_pk(space)),
            TIMELINE_SK: s(after),
        }
    while True:
        with db.translate():
            page = db.client().query(**query)
        places = [item[TIMELINE_SK]["S"] for item in page.get("Items", [])]
        found = {
            (st := from_item(space, item)).memory.id: st.memory
            for item in _batch_get(space, [timeline_id(p) for p in places], _ATTRS, consistent=False)
        }
        for place in places:
            memory = found.get(timeline_id(place))
            if memory is None or not memory.is_live(live_at):
                continue
            if (start is not None and memory.when < start) or (end is not None and memory.when >= end):
                continue
            yield place, memory
        if "LastEvaluatedKey" not in page:
            return
        query["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def backfill_timeline() -> int:
    """Give the memories stored before the timeline index existed their place in it (a one-off scan of
    the table, after an upgrade; every write since sets it). Each update is conditional on the memory
    still having no place, so a write landing meanwhile wins; it takes no version and logs no change
    (the index keys are not the memory's content: no event, no cache moves). Returns how many memories
    it placed."""
    kwargs: dict[str, Any] = {
        "TableName": db.table(),
        "FilterExpression": (
            "attribute_not_exists(#p) AND attribute_exists(created_at) AND attribute_exists(#k)"
        ),
        "ProjectionExpression": "pk, sk, created_at, valid_at",
        "ExpressionAttributeNames": {"#p": TIMELINE_PK, "#k": "key"},
    }
    placed = 0
    while True:
        with db.translate():
            page = db.client().scan(**kwargs)
        for item in page.get("Items", []):
            raw = plain_item(item)
            key = parse_sk(raw["sk"])
            try:
                user_id = user_of(raw["pk"])  # (API key lookups live outside users' partitions)
            except ValueError:
                continue
            if key.kind != "nugget":
                continue
            space = Space(user_id, key.mind_id)
            moment = raw.get("valid_at") or raw["created_at"]
            try:
                with db.translate():
                    db.client().update_item(
                        TableName=db.table(),
                        Key={"pk": item["pk"], "sk": item["sk"]},
                        UpdateExpression="SET #p = :p, #s = :s",
                        ConditionExpression="attribute_exists(sk) AND attribute_not_exists(#p)",
                        ExpressionAttributeNames={"#p": TIMELINE_PK, "#s": TIMELINE_SK},
                        ExpressionAttributeValues={
                            ":p": s(timeline_pk(space)),
                            ":s": s(timeline_sk(iso(parse_iso(moment)), key.name)),
                        },
                    )
            except ClientError as exc:
                if not db.is_condition_failure(exc):
                    raise
                continue
            placed += 1
        if "LastEvaluatedKey" not in page:
            return placed
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
