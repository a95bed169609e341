"""Minds: a user's memory spaces. The item `mind:<mindId>` holds a mind, `mindname:<name>` keeps
names unique per user (case-insensitive). The default mind always exists; its item `mind:default`
(no name: the default mind's is the userId) is stored the first time it is needed and holds when
it was first seen, so that GET /minds answers the same `created_at` every time."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from synapse.core.errors import Conflict, NotFound
from synapse.core.models.base import DEFAULT_MIND, DEFAULT_TIMEZONE, iso, parse_iso, utcnow
from synapse.store import changelog, db, snapshots
from synapse.store.codec import n, plain_item, s
from synapse.store.keys import (
    APIKEY,
    LOOKUP_SK,
    MIND,
    Space,
    apikey_pk,
    mind_sk,
    user_pk,
)

NAME_GUARD = "mindname:"


@dataclass(frozen=True)
class MindRecord:
    mind_id: str
    name: str
    description: str | None
    created_at: datetime
    # settings (PATCH /minds/{mindId}): relative dates and periods are read in `timezone`; with
    # `review_agent_changes`, an agent's change of a verified memory waits for a person's yes
    timezone: str = DEFAULT_TIMEZONE
    review_agent_changes: bool = True
    # the item's revision: a settings write is conditional on the one it read (0: never changed)
    rev: int = field(default=0, compare=False)


@dataclass(eq=False)
class Mind:
    """The mind a request acts in: where its items are (`space`), and its record, read from the
    table at most once per request (`record`), when the mind is resolved or on first need.

    What is per mind beyond the space (its name, and the settings the next releases add) is read
    from here, so that a request reads the mind's item once whichever services use it."""

    space: Space
    _record: MindRecord | None = field(default=None, repr=False)
    _read: bool = field(default=False, repr=False)

    @property
    def user_id(self) -> str:
        return self.space.user_id

    @property
    def mind_id(self) -> str:
        return self.space.mind_id

    @property
    def is_default(self) -> bool:
        return self.space.is_default

    @property
    def record(self) -> MindRecord | None:
        """The mind's stored item; None for a mind that does not exist, and for the default mind
        before its item is first stored."""
        if not self._read:
            self._record, self._read = get_mind(self.user_id, self.mind_id), True
        return self._record

    @property
    def timezone(self) -> str:
        """The mind's IANA timezone (UTC unless set): where "yesterday" and "last week" are read."""
        return self.record.timezone if self.record is not None else DEFAULT_TIMEZONE

    @property
    def review_agent_changes(self) -> bool:
        """Whether an agent's change of a verified memory becomes a proposal (the default)."""
        return self.record.review_agent_changes if self.record is not None else True

    @property
    def name(self) -> str:
        """The default mind's name is the userId (nothing read); another's is its record's."""
        if self.is_default:
            return self.user_id
        if self.record is None:
            raise NotFound(NO_MIND)
        return self.record.name


NO_MIND = "No mind with that id."


def _name_sk(name: str) -> str:
    return f"{NAME_GUARD}{name.casefold()}"


def put_mind(user_id: str, record: MindRecord) -> None:
    """A new mind and its name's guard, together; Conflict if the name is taken."""
    item: dict[str, Any] = {
        **db.key(user_pk(user_id), mind_sk(record.mind_id)),
        "name": s(record.name),
        "created_at": s(iso(record.created_at)),
    }
    if record.description:
        item["description"] = s(record.description)
    item.update(_settings(record))
    guard = {**db.key(user_pk(user_id), _name_sk(record.name)), "mind_id": s(record.mind_id)}
    actions: list[dict[str, Any]] = [
        {"Put": {"TableName": db.table(), "Item": item, "ConditionExpression": "attribute_not_exists(sk)"}},
        {"Put": {"TableName": db.table(), "Item": guard, "ConditionExpression": "attribute_not_exists(sk)"}},
    ]
    if not db.won(actions):
        raise Conflict("A mind with that name exists already.")


def _settings(record: MindRecord) -> dict[str, Any]:
    """The settings' attributes (defaults are not stored: a mind without them has the defaults)."""
    out: dict[str, Any] = {}
    if record.timezone != DEFAULT_TIMEZONE:
        out["timezone"] = s(record.timezone)
    if not record.review_agent_changes:
        out["review_agent_changes"] = {"BOOL": False}
    return out


def mind_from_item(raw: dict[str, Any]) -> MindRecord:
    mind_id = raw["sk"].removeprefix(MIND)
    return MindRecord(
        mind_id=mind_id,
        # the default mind's item has no name: its name is the userId, which no other mind may take
        name=raw["name"] if "name" in raw else str(raw["pk"]).removeprefix(user_pk("")),
        description=raw.get("description"),
        created_at=parse_iso(raw["created_at"]),
        timezone=raw.get("timezone") or DEFAULT_TIMEZONE,
        review_agent_changes=bool(raw.get("review_agent_changes", True)),
        rev=int(raw.get("rev") or 0),
    )


def get_mind(user_id: str, mind_id: str) -> MindRecord | None:
    item = db.get(user_pk(user_id), mind_sk(mind_id))
    return mind_from_item(plain_item(item)) if item else None


def list_minds(user_id: str) -> list[MindRecord]:
    """Every stored mind of the user (the default one's item too, once stored), oldest first."""
    found = [mind_from_item(plain_item(item)) for item in db.query_prefix(user_pk(user_id), MIND)]
    return sorted(found, key=lambda m: (m.created_at, m.mind_id))


def default_mind(user_id: str) -> MindRecord:
    """The default mind's item, stored now if it is not yet (conditionally: of two first requests,
    the first write wins and the other reads it)."""
    record = MindRecord(mind_id=DEFAULT_MIND, name=user_id, description=None, created_at=utcnow())
    item = {**db.key(user_pk(user_id), mind_sk(DEFAULT_MIND)), "created_at": s(iso(record.created_at))}
    try:
        with db.translate():
            db.client().put_item(
                TableName=db.table(), Item=item, ConditionExpression="attribute_not_exists(sk)"
            )
    except ClientError as exc:
        if not db.is_condition_failure(exc):
            raise
        return get_mind(user_id, DEFAULT_MIND) or record
    return record


def update_mind(user_id: str, read: MindRecord, new: MindRecord) -> bool:
    """Store a mind's new settings over the record read (PATCH /minds/{mindId}), conditional on the
    item's revision being the one read; a new name moves the name's guard in the same transaction.
    False: another writer changed the mind since it was read (read again). Conflict: the new name is
    another mind's. NotFound: the mind is gone."""
    names = {"#rev": "rev", "#d": "description", "#tz": "timezone", "#r": "review_agent_changes"}
    values: dict[str, Any] = {":rev": n(read.rev + 1)}
    sets, removes = ["#rev = :rev"], []
    if new.mind_id != DEFAULT_MIND:  # the default mind's name is the userId: never stored
        sets.append("#n = :n")
        names["#n"] = "name"
        values[":n"] = s(new.name)
    if new.description:
        sets.append("#d = :d")
        values[":d"] = s(new.description)
    else:
        removes.append("#d")
    settings = _settings(new)
    for name, placeholder in (("timezone", "#tz"), ("review_agent_changes", "#r")):
        if name in settings:
            sets.append(f"{placeholder} = :{placeholder[1:]}")
            values[f":{placeholder[1:]}"] = settings[name]
        else:
            removes.append(placeholder)
    if read.rev:
        condition, values[":read"] = "#rev = :read", n(read.rev)
    else:
        condition = "attribute_exists(sk) AND attribute_not_exists(#rev)"
    pk = user_pk(user_id)
    actions: list[dict[str, Any]] = [
        {
            "Update": {
                "TableName": db.table(),
                "Key": db.key(pk, mind_sk(read.mind_id)),
                "UpdateExpression": "SET "
                + ", ".join(sets)
                + (" REMOVE " + ", ".join(removes) if removes else ""),
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
        }
    ]
    renamed = new.name.casefold() != read.name.casefold() and read.mind_id != DEFAULT_MIND
    if renamed:
        guard = {**db.key(pk, _name_sk(new.name)), "mind_id": s(new.mind_id)}
        actions += [
            {
                "Put": {
                    "TableName": db.table(),
                    "Item": guard,
                    "ConditionExpression": "attribute_not_exists(sk)",
                }
            },
            {"Delete": {"TableName": db.table(), "Key": db.key(pk, _name_sk(read.name))}},
        ]
    failed = changelog.transact(actions)
    if failed is None:
        return True
    if renamed and len(failed) > 1 and failed[1]:
        raise Conflict("A mind with that name exists already.")
    if failed[0] and get_mind(user_id, read.mind_id) is None:
        raise NotFound(NO_MIND)
    return False


def delete_mind(user_id: str, mind_id: str) -> int:
    """A mind and everything in it: its keys stop working first (lookups, then listings), then its
    memories, versions, sessions, messages, summaries and identity, then the mind, then its snapshots
    (last: a snapshot writer that read the mind before checks its version after writing, and finds it
    gone). NotFound if there is no such mind. Returns the number of items and objects deleted."""
    record = get_mind(user_id, mind_id)
    if record is None:
        # (a deletion interrupted after the items is finished by its retry: the snapshots go too)
        snapshots.delete_mind(user_id, mind_id)
        raise NotFound("No mind with that id.")
    pk = user_pk(user_id)
    keys: list[dict[str, Any]] = []
    for item in db.query_prefix(pk, APIKEY, ProjectionExpression="pk, sk, key_hash, mind_id"):
        if item.get("mind_id", {}).get("S") == mind_id:
            if "key_hash" in item:
                keys.append(db.key(apikey_pk(item["key_hash"]["S"]), LOOKUP_SK))
            keys.append({"pk": item["pk"], "sk": item["sk"]})
    db.batch_write([{"DeleteRequest": {"Key": k}} for k in keys])
    # the mind's last change-log entry (the source of its `mind.deleted` event, after every event of
    # its memories); the deletion of its contents below takes it away again
    changelog.commit(Space(user_id, mind_id), [changelog.Change.mind_deleted()])
    contents = [
        {"pk": i["pk"], "sk": i["sk"]}
        for i in db.query_prefix(pk, f"{mind_id}:", ProjectionExpression="pk, sk")
    ]
    db.batch_write([{"DeleteRequest": {"Key": k}} for k in contents])
    last = [db.key(pk, mind_sk(mind_id)), db.key(pk, _name_sk(record.name))]
    db.batch_write([{"DeleteRequest": {"Key": k}} for k in last])
    objects = snapshots.delete_mind(user_id, mind_id)
    return len(keys) + len(contents) + len(last) + objects
