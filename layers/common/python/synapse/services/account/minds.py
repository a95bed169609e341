"""Minds: the memory spaces of a user. Every memory, conversation and MCP route acts in one mind: the
one `X-Mind-Id` names (users), the key's own (Mind Keys), else the default one."""

from __future__ import annotations

import secrets
import string

from synapse.core.errors import Conflict, NotFound
from synapse.core.models.base import DEFAULT_MIND, utcnow
from synapse.core.models.minds import MindIn, MindInfo, MindList, MindOut
from synapse.core.principal import Principal
from synapse.store import keys, minds
from synapse.store.keys import Space

_ALPHABET = string.ascii_lowercase + string.digits
NO_MIND = "No mind with that id."


def space_of(who: Principal) -> Space:
    """The mind a caller acts in; NotFound for a mind the user does not have. A Mind Key's mind is
    not read again: deleting a mind revokes its keys first."""
    if who.mind_id != DEFAULT_MIND and not who.bound and minds.get_mind(who.user_id, who.mind_id) is None:
        raise NotFound(NO_MIND)
    return Space(who.user_id, who.mind_id)


def name_of(who: Principal) -> str:
    """The chosen mind's name (the default mind's is the userId)."""
    if who.mind_id == DEFAULT_MIND:
        return who.user_id
    record = minds.get_mind(who.user_id, who.mind_id)
    if record is None:
        raise NotFound(NO_MIND)
    return record.name


def check_exists(user_id: str, mind_id: str) -> None:
    if mind_id != DEFAULT_MIND and minds.get_mind(user_id, mind_id) is None:
        raise NotFound(NO_MIND)


def create(who: Principal, body: MindIn) -> MindOut:
    """POST /minds: a new mind; 409 if the name (case-insensitive, the userId included) is taken."""
    who.require_user()
    name = body.name.strip()
    if name.casefold() == who.user_id.casefold():
        raise Conflict("That name is the default mind's.")
    record = minds.MindRecord(
        mind_id="m_" + "".join(secrets.choice(_ALPHABET) for _ in range(12)),
        name=name,
        description=body.description,
        created_at=utcnow(),
    )
    minds.put_mind(who.user_id, record)
    return MindOut(
        mind_id=record.mind_id, name=record.name, description=record.description, created_at=record.created_at
    )


def list_all(who: Principal) -> MindList:
    """GET /minds: every mind, the default one first, with its number of memories."""
    who.require_user()
    default = MindInfo(
        mind_id=DEFAULT_MIND,
        name=who.user_id,
        description=None,
        created_at=utcnow(),
        memories=minds.count_memories(Space(who.user_id)),
    )
    others = [
        MindInfo(
            mind_id=m.mind_id,
            name=m.name,
            description=m.description,
            created_at=m.created_at,
            memories=minds.count_memories(Space(who.user_id, m.mind_id)),
        )
        for m in minds.list_minds(who.user_id)
    ]
    return MindList(minds=[default, *others])


def delete(who: Principal, mind_id: str) -> None:
    """DELETE /minds/{mindId}: the mind, everything in it, and its keys (at once)."""
    who.require_user()
    if mind_id == DEFAULT_MIND:
        raise Conflict("The default mind cannot be deleted (DELETE /me deletes everything).")
    if not keys.is_mind_id(mind_id):
        raise NotFound(NO_MIND)
    minds.delete_mind(who.user_id, mind_id)
