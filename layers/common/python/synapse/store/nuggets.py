"""Memories (nuggets): the one codec (item ↔ `Memory`), the one write path, the reads.

A memory is the item `pk = mem:<userId>`, `sk = [<mindId>:]nug:<uuid>`; its revision `rev` is the
memory's `version` (1 when created, +1 on every change). Every write goes through `save`: conditional
on the revision the writer read, so two writers never silently overwrite each other (the loser reads
again), and in the same transaction the version it replaces is kept as `[<mindId>:]hist:<uuid>:<v>`
(outside the recall prefix: a recall never reads versions).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from itertools import repeat
from operator import itemgetter
from typing import Any

from synapse.core.errors import NotFound
from synapse.core.models.base import PRIORITY_RANK, Category, Priority, Source, iso, parse_iso
from synapse.core.models.base import Change as ChangeKind
from synapse.core.models.memory import Memory, MemoryVersion
from synapse.store import changelog as log
from synapse.store import db
from synapse.store.codec import BadCursor, Vector, attr, decode_cursor, encode_cursor, n, plain, plain_item, s
from synapse.store.keys import (
    NUGGET,
    Space,
    history_prefix,
    history_sk,
    is_service_id,
    memory_id,
    nugget_id,
    nugget_sk,
)

# The attributes a memory answer needs (the vector stays behind: it is most of the item's bytes;
# DynamoDB charges the whole item's size whatever the projection, but the answer is smaller)
_ATTRS = (
    "sk, category, #k, content, tags, priority, #src, verified, confidence, "
    "expires_at, session_id, created_at, updated_at, valid_at, #rev, #chg"
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
    }


# --- writes -----------------------------------------------------------------------------------------


def next_version(read: Stored | None) -> int:
    """The version a write makes of what it read."""
    return read.memory.version + 1 if read is not None else 1


@dataclass(frozen=True)
class Write:
    """One memory to store: the whole memory as it is to be (its `version` is `next_version(read)`),
    a new vector (None keeps the stored one), the read it replaces (None: it must not exist yet), and
    what kind of change it is."""

    memory: Memory
    read: Stored | None
    vector: Vector | None = None
    kind: ChangeKind = ChangeKind.updated

    @property
    def rev(self) -> int:
        return next_version(self.read)


def _version_item(space: Space, old: Stored) -> dict[str, Any]:
    """The kept copy of a version a write replaces (no vector: history is read, never scored)."""
    m = old.memory
    attributes = {
        "version": m.version,
        "content": m.content,
        "tags": list(m.tags),
        "priority": m.priority.value,
        "source": m.source.value,
        "verified": m.verified,
        "confidence": m.confidence,
        "expires_at": iso(m.expires_at) if m.expires_at is not None else None,
        "updated_at": iso(m.updated_at),
        "change": old.change.value,
        "valid_at": iso(m.valid_at) if m.valid_at is not None else None,
    }
    return {
        **db.key(space.pk, space.sk(history_sk(m.id, m.version))),
        **{k: attr(v) for k, v in attributes.items() if v is not None},
    }


def _actions(space: Space, change: Write) -> list[dict[str, Any]]:
    """A change's transaction actions: the conditional update, and the kept copy of what it replaces
    (with the copy that falls out of the kept window deleted)."""
    actions: list[dict[str, Any]] = [{"Update": _update(space, change)}]
    if change.read is not None:
        actions.append({"Put": {"TableName": db.table(), "Item": _version_item(space, change.read)}})
        expired = change.read.memory.version - HISTORY_KEPT
        if expired >= 1:
            key = db.key(space.pk, space.sk(history_sk(change.memory.id, expired)))
            actions.append({"Delete": {"TableName": db.table(), "Key": key}})
    return actions


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
    for attempt in range(VERSION_ATTEMPTS):
        failed = log.transact(flat + log.step(space, log.read(space), said))
        if failed is None:
            return []
        # each change's first action is its conditional update
        starts = [sum(map(len, actions[:i])) for i in range(len(part))]
        lost = [c.memory.id for c, at in zip(part, starts, strict=True) if at < len(failed) and failed[at]]
        if lost:
            return lost
        db.backoff(min(attempt, 4))  # (a short wait: the number is free again within a request's time)
    raise db.busy()


def delete(space: Space, mem_id: str) -> Category:
    """Delete a memory and its history (deleted means gone); returns its category. NotFound if it
    does not exist. The history goes first: a version left behind could be taken for one of a later
    memory of the same key. The deletion takes the mind's next version, like any write."""
    if not is_service_id(mem_id):
        raise NotFound(NO_MEMORY)
    found = get(space, mem_id)
    if found is None:
        raise NotFound(NO_MEMORY)
    kept = db.query_prefix(space.pk, space.sk(history_prefix(mem_id)), ProjectionExpression="pk, sk")
    db.batch_write([{"DeleteRequest": {"Key": {"pk": i["pk"], "sk": i["sk"]}}} for i in kept])
    gone = {
        "Delete": {
            "TableName": db.table(),
            "Key": db.key(space.pk, space.sk(nugget_sk(mem_id))),
            "ConditionExpression": "attribute_exists(sk)",
        }
    }
    for attempt in range(VERSION_ATTEMPTS):
        said = [log.Change.memory(mem_id, log.DELETED, found.memory.version)]
        failed = log.transact([gone, *log.step(space, log.read(space), said)])
        if failed is None:
            return found.memory.category
        if failed and failed[0]:
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
    live_at: datetime | None = None  # hide memories expired at this time
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


def _batch_get(space: Space, ids: Sequence[str], projection: str) -> list[db.Item]:
    """Some nugget items of a mind, consistent, in id order (BatchGetItem, 100 keys a call); an id
    with no memory is left out."""
    found: list[db.Item] = []
    keys = [db.key(space.pk, space.sk(nugget_sk(i))) for i in dict.fromkeys(ids)]
    for start in range(0, len(keys), 100):
        pending: dict[str, Any] = {
            db.table(): {
                "Keys": keys[start : start + 100],
                "ProjectionExpression": projection,
                "ExpressionAttributeNames": _NAMES,
                "ConsistentRead": True,
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
