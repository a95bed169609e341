"""Review: a person decides on what agents proposed (GET /memory/proposals, accept, decline).

Proposals are made where agents write (services/memory/memories.py `propose`, ingest); here a person
lists them, accepts one (with optional edits: a memory write through the one write path, as the
person, conditional on the version the agent saw) or declines it. Either way the proposal is gone.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from synapse.core.errors import Conflict, NotFound, ValidationFailed
from synapse.core.models.base import Change, at_midnight, utcnow
from synapse.core.models.memory import Memory
from synapse.core.models.review import AcceptIn, Proposal, ProposalKind, ProposalList
from synapse.core.principal import Principal
from synapse.services.memory import memories, writers
from synapse.services.memory.identity import IDENTITY_CATEGORIES, rebuild_identity
from synapse.store import codec, db, nuggets, proposals
from synapse.store.account.minds import Mind

NO_PROPOSAL = "No pending proposal with that id."
STALE = (
    "The memory has changed since this proposal was made (its version is no longer the proposal's "
    "base_version): decline it, or read the memory and write what you want."
)


def pending(who: Principal, mind: Mind, limit: int, cursor: str | None) -> ProposalList:
    """GET /memory/proposals: the mind's pending proposals, newest first."""
    who.require_user()
    try:
        found, next_cursor = proposals.page(mind.space, limit, cursor)
    except codec.BadCursor as exc:
        raise memories.bad_cursor() from exc
    return ProposalList(proposals=found, next_cursor=next_cursor)


def decline(who: Principal, mind: Mind, proposal_id: str) -> None:
    """POST /memory/proposals/{proposalId}/decline: the proposal is gone, the memory unchanged."""
    who.require_user()
    if not proposals.delete(mind.space, proposal_id):
        raise NotFound(NO_PROPOSAL)


def _moment(value: datetime | date | None, mind: Mind) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return at_midnight(value, mind.timezone)  # a day: 00:00 of it in the mind's timezone


def accept(who: Principal, mind: Mind, proposal_id: str, edits: AcceptIn | None) -> Memory | None:
    """POST /memory/proposals/{proposalId}/accept: the proposed change, with the person's edits, as
    the person's write (source user, verified, `change: accepted`); None for an accepted deletion.
    409 when the memory is no longer at the proposal's base version."""
    who.require_user()
    space = mind.space
    proposal = proposals.get(space, proposal_id)
    if proposal is None:
        raise NotFound(NO_PROPOSAL)
    current = nuggets.get(space, proposal.memory_id)
    if current is None or current.memory.version != proposal.base_version:
        raise Conflict(STALE)
    if proposal.kind is ProposalKind.delete:
        if edits is not None and edits.model_fields_set:
            raise ValidationFailed.at(["body"], "a deletion is accepted as it is, without edits")
        try:
            category = nuggets.delete(space, proposal.memory_id, expect=current)
        except nuggets.LostRace as exc:
            raise Conflict(STALE) from exc
        for other in proposals.of_memory(space, proposal.memory_id):
            proposals.delete(space, other)
        if category in IDENTITY_CATEGORIES:
            rebuild_identity(space)
        return None
    changes = _accepted_fields(who, mind, proposal, edits)
    if proposal.kind is ProposalKind.update:
        memory = _accept_update(space, current, changes)
    else:
        memory = _accept_supersede(who, mind, proposal, current, changes)
    proposals.delete(space, proposal_id)
    if memory.category in IDENTITY_CATEGORIES or current.memory.category in IDENTITY_CATEGORIES:
        rebuild_identity(space)
    return memory


def _accepted_fields(
    who: Principal, mind: Mind, proposal: Proposal, edits: AcceptIn | None
) -> dict[str, Any]:
    """The proposed fields with the person's edits over them, stamped as the person's write (the
    confidence is the person's default unless they edit it: a person's yes is not an agent's guess)."""
    assert proposal.proposed is not None
    p = proposal.proposed
    fields: dict[str, Any] = {
        "content": p.content,
        "tags": p.tags,
        "priority": p.priority,
        "expires_at": p.expires_at,
        "valid_at": p.valid_at,
    }
    confidence = None
    if edits is not None:
        sent = edits.model_fields_set
        for name in ("content", "tags", "priority"):
            if name in sent:
                value = getattr(edits, name)
                if value is None:
                    raise ValidationFailed.at(["body", name], "cannot be null")
                fields[name] = value
        if "expires_at" in sent:
            fields["expires_at"] = edits.expires_at
        if "valid_at" in sent:
            fields["valid_at"] = _moment(edits.valid_at, mind)
        confidence = edits.confidence
    return {**fields, **writers.of(who).stamp(confidence), "updated_at": utcnow()}


def _accept_update(space: Any, current: nuggets.Stored, changes: dict[str, Any]) -> Memory:
    base = current.memory.version
    vector = (
        memories.embed_document(space.user_id, changes["content"])
        if changes["content"] != current.memory.content
        else None
    )

    def make(read: nuggets.Stored | None) -> Memory:
        if read is None or read.memory.version != base:
            raise Conflict(STALE)
        return read.memory.model_copy(update=changes)

    return memories.write(
        space,
        current.memory.id,
        make,
        vector=vector,
        read=current,
        known=True,
        kind=lambda _: Change.accepted,
    )[0]


def _accept_supersede(
    who: Principal, mind: Mind, proposal: Proposal, current: nuggets.Stored, changes: dict[str, Any]
) -> Memory:
    """The replacing memory, written as the person's (under its own key), and the verified one
    superseded by it, in one transaction conditional on both versions read."""
    space = mind.space
    new_id = nuggets.id_for(space, proposal.category, proposal.key)
    if new_id == current.memory.id:
        raise Conflict(STALE)
    vector = memories.embed_document(who.user_id, changes["content"])
    for attempt in range(nuggets.WRITE_ATTEMPTS):
        old = nuggets.get(space, current.memory.id)
        if old is None or old.memory.version != proposal.base_version:
            raise Conflict(STALE)
        read = nuggets.get(space, new_id)
        now = changes["updated_at"]
        if read is not None:
            memory = read.memory.model_copy(update={**changes, "superseded_by": None})
        else:
            memory = Memory(
                id=new_id,
                category=proposal.category,
                key=proposal.key,
                user_id=space.user_id,
                created_at=now,
                session_id=proposal.session_id,
                **changes,
            )
        memory = memory.model_copy(update={"version": nuggets.next_version(read), "mind_id": space.mind_id})
        hidden = old.memory.model_copy(
            update={"superseded_by": new_id, "updated_at": now, "version": nuggets.next_version(old)}
        )
        try:
            nuggets.save(
                space,
                [
                    nuggets.Write(memory=memory, read=read, vector=vector, kind=Change.accepted),
                    nuggets.Write(memory=hidden, read=old, kind=Change.superseded),
                ],
            )
        except nuggets.LostRace:
            db.backoff(attempt)
            continue
        return memory
    raise db.busy()
