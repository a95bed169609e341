"""Minds: a user's memory spaces. The item `mind:<mindId>` holds a mind, `mindname:<name>` keeps
names unique per user (case-insensitive); the default mind is no item (it always exists)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from synapse.core.errors import Conflict, NotFound
from synapse.core.models.base import iso, parse_iso
from synapse.store import db, snapshots
from synapse.store.codec import plain_item, s
from synapse.store.keys import (
    APIKEY,
    LOOKUP_SK,
    MIND,
    NUGGET,
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
    guard = {**db.key(user_pk(user_id), _name_sk(record.name)), "mind_id": s(record.mind_id)}
    actions: list[dict[str, Any]] = [
        {"Put": {"TableName": db.table(), "Item": item, "ConditionExpression": "attribute_not_exists(sk)"}},
        {"Put": {"TableName": db.table(), "Item": guard, "ConditionExpression": "attribute_not_exists(sk)"}},
    ]
    if not db.won(actions):
        raise Conflict("A mind with that name exists already.")


def mind_from_item(raw: dict[str, Any]) -> MindRecord:
    return MindRecord(
        mind_id=raw["sk"].removeprefix(MIND),
        name=raw["name"],
        description=raw.get("description"),
        created_at=parse_iso(raw["created_at"]),
    )


def get_mind(user_id: str, mind_id: str) -> MindRecord | None:
    item = db.get(user_pk(user_id), mind_sk(mind_id))
    return mind_from_item(plain_item(item)) if item else None


def list_minds(user_id: str) -> list[MindRecord]:
    """Every mind of the user but the default one, oldest first."""
    found = [mind_from_item(plain_item(item)) for item in db.query_prefix(user_pk(user_id), MIND)]
    return sorted(found, key=lambda m: (m.created_at, m.mind_id))


def count_memories(space: Space) -> int:
    """How many memories a mind holds (a count query: read units, but no items sent)."""
    total = 0
    for page in _count_pages(space):
        total += page
    return total


def _count_pages(space: Space) -> Any:
    kwargs: dict[str, Any] = {
        "TableName": db.table(),
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :pre)",
        "ExpressionAttributeValues": {":pk": s(space.pk), ":pre": s(space.sk(NUGGET))},
        "Select": "COUNT",
    }
    while True:
        with db.translate():
            page = db.client().query(**kwargs)
        yield int(page.get("Count", 0))
        if "LastEvaluatedKey" not in page:
            return
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


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
    contents = [
        {"pk": i["pk"], "sk": i["sk"]}
        for i in db.query_prefix(pk, f"{mind_id}:", ProjectionExpression="pk, sk")
    ]
    db.batch_write([{"DeleteRequest": {"Key": k}} for k in contents])
    last = [db.key(pk, mind_sk(mind_id)), db.key(pk, _name_sk(record.name))]
    db.batch_write([{"DeleteRequest": {"Key": k}} for k in last])
    objects = snapshots.delete_mind(user_id, mind_id)
    return len(keys) + len(contents) + len(last) + objects
