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
from synapse.store.minds import NO_MIND, Mind

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
    stored = minds.list_minds(who.user_id)
    default = next((m for m in stored if m.mind_id == DEFAULT_MIND), None)
    if default is None:  # the first time: when the default mind was first seen is kept from now on
        default = minds.default_mind(who.user_id)
    return MindList(
        minds=[
            MindInfo(
                mind_id=m.mind_id,
                name=m.name,
                description=m.description,
                created_at=m.created_at,
                memories=minds.count_memories(Space(who.user_id, m.mind_id)),
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
