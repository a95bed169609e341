"""Minds: the memory spaces of a user. Every memory, conversation and MCP route acts in one mind: the
one `X-Mind-Id` names (users), the key's own (Mind Keys), else the default one."""

from __future__ import annotations

import dataclasses
import secrets
import string
from typing import Any

from synapse.core.config import settings
from synapse.core.errors import Conflict, NotFound, QuotaExceeded, ValidationFailed
from synapse.core.models.base import DEFAULT_MIND, DEFAULT_TIMEZONE, utcnow
from synapse.core.models.minds import MindIn, MindInfo, MindList, MindOut, MindPatch, MindQuota
from synapse.core.principal import Principal
from synapse.store import db, keys, nuggets
from synapse.store.account import minds
from synapse.store.account.minds import NO_MIND, Mind
from synapse.store.keys import Space

_ALPHABET = string.ascii_lowercase + string.digits


def resolve(who: Principal) -> Mind:
    """The mind a caller acts in, resolved once per request. A mind a user names must exist
    (NotFound otherwise): it is read now, and what was read is kept for the request. A Mind Key's
    mind is not read (deleting a mind revokes its keys first), nor is the default mind: their record
    is read on first need, if any."""
    mind = Mind(Space(who.user_id, who.mind_id))
    if not mind.is_default and not who.bound and mind.record is None:
        raise NotFound(NO_MIND)
    return mind


def check_exists(user_id: str, mind_id: str) -> None:
    if mind_id != DEFAULT_MIND and minds.get_mind(user_id, mind_id) is None:
        raise NotFound(NO_MIND)


def create(who: Principal, body: MindIn) -> MindOut:
    """POST /minds: a new mind; 409 if the name (case-insensitive, the userId included) is taken."""
    who.require_user()
    name = body.name.strip()
    if name.casefold() == who.user_id.casefold():
        raise Conflict("That name is the default mind's.")
    limit = settings().max_minds
    others = [m for m in minds.list_minds(who.user_id) if m.mind_id != DEFAULT_MIND]
    if len(others) + 1 >= limit:  # the default mind counts
        raise QuotaExceeded(f"You have {limit} minds, the limit (MAX_MINDS): delete one first.")
    record = minds.MindRecord(
        mind_id="m_" + "".join(secrets.choice(_ALPHABET) for _ in range(12)),
        name=name,
        description=body.description,
        created_at=utcnow(),
        timezone=body.timezone or DEFAULT_TIMEZONE,
        review_agent_changes=body.review_agent_changes is not False,
    )
    minds.put_mind(who.user_id, record)
    return out(record)


def out(record: minds.MindRecord) -> MindOut:
    return MindOut(
        mind_id=record.mind_id,
        name=record.name,
        description=record.description,
        created_at=record.created_at,
        timezone=record.timezone,
        review_agent_changes=record.review_agent_changes,
    )


def list_all(who: Principal) -> MindList:
    """GET /minds: every mind, the default one first, with its number of memories."""
    who.require_user()
    stored = minds.list_minds(who.user_id)
    default = next((m for m in stored if m.mind_id == DEFAULT_MIND), None)
    if default is None:  # the first time: when the default mind was first seen is kept from now on
        default = minds.default_mind(who.user_id)
    return MindList(
        minds=[
            MindInfo(
                **out(m).model_dump(),
                memories=nuggets.count(Space(who.user_id, m.mind_id)),
                quota=MindQuota(memories=nuggets.quota()),
            )
            for m in [default, *(m for m in stored if m.mind_id != DEFAULT_MIND)]
        ]
    )


def delete(who: Principal, mind_id: str) -> None:
    """DELETE /minds/{mindId}: the mind, everything in it, and its keys (at once)."""
    who.require_user()
    if mind_id == DEFAULT_MIND:
        raise Conflict("The default mind cannot be deleted (DELETE /me deletes everything).")
    if not keys.is_mind_id(mind_id):
        raise NotFound(NO_MIND)
    minds.delete_mind(who.user_id, mind_id)


def update(who: Principal, mind_id: str, body: MindPatch) -> MindOut:
    """PATCH /minds/{mindId}: any of name, description, timezone, review_agent_changes (the default
    mind's too). Only what is sent changes; `description: null` clears it, `timezone: null` and
    `review_agent_changes: null` go back to the defaults (UTC, true). A read-modify-write conditional
    on the mind's revision: of two concurrent writers, the loser reads again and applies its change
    to what the winner wrote."""
    who.require_user()
    if not keys.is_mind_id(mind_id):
        raise NotFound(NO_MIND)
    changes = _changes(who, mind_id, body)
    for attempt in range(WRITE_ATTEMPTS):
        current = minds.get_mind(who.user_id, mind_id)
        if current is None and mind_id == DEFAULT_MIND:
            current = minds.default_mind(who.user_id)  # stored the first time it is needed
        if current is None:
            raise NotFound(NO_MIND)
        new = dataclasses.replace(current, **changes)
        if new == current:  # nothing to change: no write, no new revision
            return out(current)
        if minds.update_mind(who.user_id, current, new):
            return out(dataclasses.replace(new, rev=current.rev + 1))
        db.backoff(attempt)
    raise db.busy()


WRITE_ATTEMPTS = 8


def _changes(who: Principal, mind_id: str, body: MindPatch) -> dict[str, Any]:
    """The record's fields a PATCH body changes; a 422 for what cannot change."""
    sent = body.model_fields_set
    changes: dict[str, Any] = {}
    if "name" in sent:
        if body.name is None:
            raise ValidationFailed.at(["body", "name"], "cannot be null")
        name = body.name.strip()
        if mind_id == DEFAULT_MIND:
            if name != who.user_id:
                raise ValidationFailed.at(
                    ["body", "name"], "the default mind's name is the userId and cannot change"
                )
        elif name.casefold() == who.user_id.casefold():
            raise Conflict("That name is the default mind's.")
        changes["name"] = name
    if "description" in sent:
        changes["description"] = body.description or None
    if "timezone" in sent:
        changes["timezone"] = body.timezone or DEFAULT_TIMEZONE
    if "review_agent_changes" in sent:
        changes["review_agent_changes"] = body.review_agent_changes is not False
    return changes
