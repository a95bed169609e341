"""Proposals (Review): an agent's change of a verified memory, kept as `[<mindId>:]prop:<id>` until a
person accepts or declines it.

A proposal is written in one transaction with a check that the memory is still at the version the
agent read and still verified (otherwise the writer reads again: the memory may be writable now), and
with the mind's next change-log seq, whose entry says `proposal.created` (the event's source, like
every memory change's). Accepting is a memory write through `nuggets.save`, conditional on the base
version; the proposal is then deleted.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Mapping
from typing import Any

from synapse.core.models.base import Category, iso, parse_iso
from synapse.core.models.review import Proposal, ProposalKind, Proposed
from synapse.store import changelog as log
from synapse.store import db
from synapse.store.codec import BadCursor, attr, decode_cursor, encode_cursor, n, plain_item, s
from synapse.store.keys import PROPOSAL, Space, nugget_sk, proposal_sk

PENDING_PER_MEMORY = 20  # API.md quotas: past it, the oldest pending proposal of the memory is dropped
_ID = re.compile(r"^[0-9a-f]{20}$")


class Stale(Exception):
    """The memory is no longer the verified version the proposal was made on: read it again."""


def new_id() -> str:
    """Milliseconds since the epoch (12 hex digits: sorts by time until the year 10889) + 32 random bits."""
    return f"{int(time.time() * 1000):012x}{secrets.token_hex(4)}"


def is_proposal_id(value: str) -> bool:
    return bool(_ID.match(value))


def _item(space: Space, p: Proposal) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "memory_id": p.memory_id,
        "kind": p.kind.value,
        "base_version": p.base_version,
        "source": p.source,
        "key_id": p.key_id,
        "session_id": p.session_id,
        "created_at": iso(p.created_at),
        "category": p.category.value,
        "key": p.key,
    }
    item: dict[str, Any] = {**db.key(space.pk, space.sk(proposal_sk(p.proposal_id)))}
    item.update({k: attr(v) for k, v in attributes.items() if v is not None})
    if p.proposed is not None:
        proposed = p.proposed.model_dump(mode="json")
        item["proposed"] = {"M": {k: attr(v) for k, v in proposed.items() if v is not None}}
    return item


def from_item(raw: Mapping[str, Any]) -> Proposal:
    plain = plain_item(raw)
    proposed = plain.get("proposed")
    return Proposal(
        proposal_id=str(plain["sk"]).rpartition(PROPOSAL)[2],
        memory_id=plain["memory_id"],
        kind=ProposalKind(plain["kind"]),
        base_version=int(plain["base_version"]),
        proposed=Proposed.model_validate(proposed) if proposed is not None else None,
        source=plain.get("source", "agent"),
        key_id=plain.get("key_id"),
        session_id=plain.get("session_id"),
        created_at=parse_iso(plain["created_at"]),
        category=Category(plain["category"]),
        key=plain["key"],
    )


def create(space: Space, proposal: Proposal) -> None:
    """Store a proposal, conditional on its memory being verified at `base_version`; Stale if not.
    The mind's next seq and its `proposal.created` entry go in the same transaction."""
    _make_room(space, proposal.memory_id)
    check = {
        "ConditionCheck": {
            "TableName": db.table(),
            "Key": db.key(space.pk, space.sk(nugget_sk(proposal.memory_id))),
            "ConditionExpression": "#rev = :base AND verified = :yes",
            "ExpressionAttributeNames": {"#rev": "rev"},
            "ExpressionAttributeValues": {":base": n(proposal.base_version), ":yes": {"BOOL": True}},
        }
    }
    put = {
        "Put": {
            "TableName": db.table(),
            "Item": _item(space, proposal),
            "ConditionExpression": "attribute_not_exists(sk)",
        }
    }
    said = [log.Change.proposal(proposal.proposal_id, proposal.memory_id)]
    for attempt in range(40):
        failed = log.transact([check, put, *log.step(space, log.read(space), said)])
        if failed is None:
            return
        if failed and failed[0]:
            raise Stale
        db.backoff(min(attempt, 4))  # only the mind's version number was taken: the next one
    raise db.busy()


def _make_room(space: Space, memory_id: str) -> None:
    """Keep a memory's pending proposals under the limit: the oldest go first."""
    pending = of_memory(space, memory_id)
    extra = len(pending) - (PENDING_PER_MEMORY - 1)
    if extra > 0:
        for proposal_id in pending[:extra]:
            delete(space, proposal_id)


def of_memory(space: Space, memory_id: str) -> list[str]:
    """The ids of a memory's pending proposals, oldest first."""
    found = db.query_prefix(
        space.pk,
        space.sk(PROPOSAL),
        ProjectionExpression="sk",
        FilterExpression="memory_id = :m",
        ExpressionAttributeValues={":m": s(memory_id)},
    )
    return [str(item["sk"]["S"]).rpartition(PROPOSAL)[2] for item in found]


def get(space: Space, proposal_id: str) -> Proposal | None:
    if not is_proposal_id(proposal_id):
        return None
    item = db.get(space.pk, space.sk(proposal_sk(proposal_id)))
    return from_item(item) if item else None


def delete(space: Space, proposal_id: str) -> bool:
    """Delete a proposal; whether it was there (of two deciders, one finds it gone)."""
    if not is_proposal_id(proposal_id):
        return False
    with db.translate():
        answer = db.client().delete_item(
            TableName=db.table(),
            Key=db.key(space.pk, space.sk(proposal_sk(proposal_id))),
            ReturnValues="ALL_OLD",
        )
    return bool(answer.get("Attributes"))


def page(space: Space, limit: int, cursor: str | None) -> tuple[list[Proposal], str | None]:
    """Pending proposals of a mind, newest first, `limit` at most; BadCursor for a foreign cursor."""
    extra: dict[str, Any] = {"ScanIndexForward": False}
    if cursor:
        sk = decode_cursor(cursor).get("sk")
        if not isinstance(sk, str) or not sk.startswith(PROPOSAL):
            raise BadCursor
        extra["ExclusiveStartKey"] = db.key(space.pk, space.sk(sk))
    found: list[Proposal] = []
    for item in db.query_prefix(space.pk, space.sk(PROPOSAL), **extra):
        found.append(from_item(item))
        if len(found) == limit + 1:
            found.pop()
            return found, encode_cursor({"sk": proposal_sk(found[-1].proposal_id)})
    return found, None
