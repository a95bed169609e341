"""Many memories at once: `POST /memory/batch` (each item answered as `POST /memory` would answer it
alone) and `POST /memory/import` (a Synapse export's memory records, or mem0's memory objects).

Both plan one write per item and store them together (`nuggets.save_batch`): one read of every
memory (BatchGetItem), one embedding call, and one turn of the mind's version number for the lot,
however many transactions the items need. An item whose memory another writer changed meanwhile is
planned again from a fresh read, as `memories.write` does for one memory.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from synapse.core.errors import Conflict, QuotaExceeded, SynapseError, ValidationFailed
from synapse.core.models.base import Category, Change, normalize_tags, utcnow
from synapse.core.models.bulk import (
    BatchItem,
    BatchOut,
    ImportFailure,
    ImportIn,
    ImportOut,
    Mem0Record,
    SynapseRecord,
)
from synapse.core.models.memory import Memory, MemoryIn, MemoryVersion
from synapse.core.models.review import Proposal, ProposalKind
from synapse.core.principal import Principal
from synapse.services.memory import memories, writers
from synapse.services.memory.identity import IDENTITY_CATEGORIES, rebuild_identity
from synapse.store import codec, db, nuggets, proposals
from synapse.store.account.minds import Mind
from synapse.store.keys import Space

BODY = ("body",)
# make: the memory as the item wants it, from what was read (None: none yet), or None when the
# memory is already exactly that (an import's skip); raises a SynapseError for the item alone
Make = Callable[[nuggets.Stored | None], Memory | None]


@dataclass
class Plan:
    """One item to write."""

    index: int
    mem_id: str
    make: Make
    text: str  # what is embedded
    version: int = 1  # a create's version (an imported memory's own, its history kept beside it)
    history: list[MemoryVersion] = field(default_factory=list)
    key_id: str | None = None  # the agent's key, for a proposal its make raises `memories.Held` for
    kind: Callable[[nuggets.Stored | None], Change] = lambda read: (
        Change.updated if read is not None else Change.created
    )


@dataclass(frozen=True)
class Outcome:
    """What became of one item: written (created or not), skipped (the memory as stored), or an error."""

    memory: Memory | None = None
    created: bool = False
    skipped: bool = False
    error: SynapseError | None = None
    proposal: Proposal | None = None  # an agent's change of a verified memory, held for review


def _vectors(user_id: str, texts: Sequence[str]) -> list[codec.Vector | None]:
    """Every item's vector in one embedding call (None each when no embedder is configured)."""
    from synapse.ai.embeddings import get_embedder  # lazy: keeps google.genai out of cold starts
    from synapse.services.account.providers import gemini_key_for

    embedder = get_embedder(gemini_key_for(user_id)) if texts else None
    if embedder is None:
        return [None] * len(texts)
    return [codec.make_vector(v, embedder.model) for v in embedder.embed_documents(list(texts))]


def _rounds(plans: list[Plan]) -> list[list[Plan]]:
    """Plans in rounds with one plan per memory each (a transaction names an item once): the second
    item of one (category, key) goes in the round after the first, so it updates what the first wrote,
    as two calls in that order would."""
    rounds: list[list[Plan]] = []
    seen: dict[str, int] = {}
    for plan in plans:
        n = seen.get(plan.mem_id, 0)
        seen[plan.mem_id] = n + 1
        if n == len(rounds):
            rounds.append([])
        rounds[n].append(plan)
    return rounds


def write_all(space: Space, user_id: str, plans: list[Plan]) -> dict[int, Outcome]:
    """Write every plan (see the module's docstring); each item's outcome by its index. A create past
    the mind's quota is QuotaExceeded in its place (the items before it are written)."""
    vectors = dict(zip((p.index for p in plans), _vectors(user_id, [p.text for p in plans]), strict=True))
    out: dict[int, Outcome] = {}
    for todo in _rounds(plans):
        for attempt in range(nuggets.WRITE_ATTEMPTS):
            todo = _write_round(space, todo, vectors, out)
            if not todo:
                break
            db.backoff(attempt)
        for plan in todo:
            out[plan.index] = Outcome(
                error=Conflict("Another write kept changing this memory; try it again.")
            )
    if any(
        o.memory is not None and not o.skipped and o.memory.category in IDENTITY_CATEGORIES
        for o in out.values()
    ):
        rebuild_identity(space)
    return out


def _write_round(
    space: Space, todo: list[Plan], vectors: dict[int, codec.Vector | None], out: dict[int, Outcome]
) -> list[Plan]:
    """One try of a round: read, make, store; returns the plans whose memory another writer changed."""
    reads = nuggets.stored_of(space, [p.mem_id for p in todo])
    room = nuggets.room(space)
    writes: list[nuggets.Write] = []
    planned: dict[str, tuple[Plan, Memory, bool]] = {}
    retry: list[Plan] = []
    for plan in todo:
        read = reads.get(plan.mem_id)
        try:
            memory = plan.make(read)
        except SynapseError as exc:
            out[plan.index] = Outcome(error=exc)
            continue
        except memories.Held as held:  # (Review) proposed, as `POST /memory` alone would
            try:
                proposal = memories.propose(
                    space, held.read, ProposalKind.update, held.memory, key_id=plan.key_id
                )
            except proposals.Stale:  # the memory changed since it was read: this round again
                retry.append(plan)
                continue
            out[plan.index] = Outcome(proposal=proposal)
            continue
        if memory is None:
            out[plan.index] = Outcome(memory=read.memory if read else None, skipped=True)
            continue
        if read is None:
            if room <= 0:
                out[plan.index] = Outcome(error=QuotaExceeded(nuggets.QUOTA.format(limit=nuggets.quota())))
                continue
            room -= 1
        version = plan.version if read is None else nuggets.next_version(read)
        memory = memory.model_copy(update={"version": version, "mind_id": space.mind_id})
        writes.append(
            nuggets.Write(memory=memory, read=read, vector=vectors[plan.index], kind=plan.kind(read))
        )
        planned[plan.mem_id] = (plan, memory, read is None)
    lost = set(nuggets.save_batch(space, writes))
    history: list[dict[str, Any]] = []
    for mem_id, (plan, memory, created) in planned.items():
        if mem_id in lost:
            continue
        out[plan.index] = Outcome(memory=memory, created=created)
        if created and plan.history:
            history += [nuggets.history_item(space, mem_id, v) for v in plan.history]
    # an imported memory's kept versions, once it exists (a read of its history meanwhile sees fewer)
    db.batch_write([{"PutRequest": {"Item": item}} for item in history])
    return [p for p in todo if p.mem_id in lost] + retry


# --- POST /memory/batch -------------------------------------------------------------------------------


def batch(who: Principal, mind: Mind, items: Sequence[Any]) -> BatchOut:
    """Each item answered as `POST /memory` answers it alone: 201/200 with the memory, 409 past the
    quota, 422 with the envelope for an invalid item (nothing of it written; the others are)."""
    space = mind.space
    plans: list[Plan] = []
    errors: dict[int, SynapseError] = {}
    for index, raw in enumerate(items):
        try:
            body = MemoryIn.model_validate(raw)
            who.check_user_id(body.userId)
        except ValidationError as exc:
            errors[index] = ValidationFailed.of(exc.errors(), BODY)
            continue
        except SynapseError as exc:
            errors[index] = exc
            continue
        mem_id = nuggets.id_for(space, body.category, body.key)

        def make(read: nuggets.Stored | None, body: MemoryIn = body, mem_id: str = mem_id) -> Memory:
            memory = memories.made(who, who.user_id, body, mem_id, read, memories.dated(mind, body))
            if memories.held_by_review(who, mind, read):
                assert read is not None
                raise memories.Held(read, memory)
            return memory

        plans.append(Plan(index=index, mem_id=mem_id, make=make, text=body.content, key_id=who.key_id))
    outcomes = write_all(space, who.user_id, plans)
    results = []
    for index in range(len(items)):
        error = errors.get(index) or outcomes[index].error
        if error is not None:
            results.append(BatchItem(status=error.status, error=_envelope(error)))
        else:
            o = outcomes[index]
            if o.proposal is not None:
                results.append(BatchItem(status=202, proposal=o.proposal.model_dump(mode="json")))
            else:
                results.append(BatchItem(status=201 if o.created else 200, memory=o.memory))
    return BatchOut(results=results)


def _envelope(err: SynapseError) -> Any:
    body: dict[str, Any] = {"code": err.code, "message": err.message}
    if err.details:
        body["details"] = err.details
    return {"error": body}


# --- POST /memory/import ------------------------------------------------------------------------------

# mem0's categories (its default set) → ours; a memory takes the first of its categories found here,
# in this order of precedence, else `note`. Every category is kept as a tag.
MEM0_CATEGORIES: dict[str, Category] = {
    "personal_details": Category.identity,
    "user_preferences": Category.preference,
    "food": Category.preference,
    "music": Category.preference,
    "fashion": Category.preference,
    "entertainment": Category.preference,
    "hobbies": Category.preference,
    "sports": Category.preference,
    "professional_details": Category.project,
    "technology": Category.skill,
    "family": Category.fact,
    "health": Category.fact,
    "travel": Category.fact,
    "milestones": Category.fact,
    "misc": Category.note,
}
_NOT_KEY = re.compile(r"[^a-z0-9_]+")


def mem0_key(mem0_id: str) -> str:
    """`mem0_<id as key characters>` (lower case; anything else becomes `_`; at most 100)."""
    return ("mem0_" + _NOT_KEY.sub("_", mem0_id.lower()))[:100]


def mem0_category(categories: Sequence[str]) -> Category:
    found = [MEM0_CATEGORIES[c] for c in (c.strip().lower() for c in categories) if c in MEM0_CATEGORIES]
    order = list(dict.fromkeys(MEM0_CATEGORIES.values()))
    return min(found, key=order.index) if found else Category.note


def import_records(who: Principal, mind: Mind, body: ImportIn) -> ImportOut:
    """POST /memory/import. A record already stored exactly as given is skipped (no new version),
    and so is a `synapse` record that is not a memory; an invalid record is an error in its place."""
    space = mind.space
    plans: list[Plan] = []
    errors: list[ImportFailure] = []
    skipped = 0
    for index, raw in enumerate(body.records):
        if body.format == "synapse" and isinstance(raw, dict) and raw.get("type", "memory") != "memory":
            skipped += 1
            continue
        try:
            if body.format == "synapse":
                plans.append(_synapse_plan(mind, who, index, SynapseRecord.model_validate(raw)))
            else:
                plans.append(_mem0_plan(mind, who, index, Mem0Record.model_validate(raw)))
        except ValidationError as exc:
            err = ValidationFailed.of(exc.errors(), ("body", "records", index))
            errors.append(ImportFailure(index=index, error=_envelope(err)))
    outcomes = write_all(space, who.user_id, plans)
    imported = updated = proposed = 0
    for plan in plans:
        o = outcomes[plan.index]
        if o.proposal is not None:
            proposed += 1
        elif o.error is not None:
            errors.append(ImportFailure(index=plan.index, error=_envelope(o.error)))
        elif o.skipped:
            skipped += 1
        elif o.created:
            imported += 1
        else:
            updated += 1
    errors.sort(key=lambda e: e.index)
    return ImportOut(
        imported=imported, updated=updated, skipped=skipped, errors=errors, proposed=proposed or None
    )


# what "stored exactly as given" compares
_SAME = ("content", "tags", "priority", "confidence", "expires_at", "valid_at", "created_at")


def _importer(
    who: Principal, mind: Mind, mem_id: str, category: Category, key: str, given: dict[str, Any]
) -> Make:
    """The make of an imported record: `given` (the fields the record sets) over the memory read, as
    the caller writes it (source, verified; confidence as given, else the caller's default). An
    agent's change of a memory a person verified is held for review, as every agent write is."""
    stamp = writers.of(who).stamp(given.pop("confidence", None))
    # times as they are stored (whole seconds), so that a record stored as given compares equal
    given = {k: v.replace(microsecond=0) if isinstance(v, datetime) else v for k, v in given.items()}
    updated_at = given.pop("updated_at", None)

    def make(read: nuggets.Stored | None) -> Memory | None:
        wanted = {**given, **stamp}
        if read is not None:
            now = {name: getattr(read.memory, name) for name in _SAME}
            if all(now[name] == wanted.get(name, now[name]) for name in _SAME):
                return None  # stored exactly as given: no new version
            changed = read.memory.model_copy(update={**wanted, "updated_at": utcnow()})
            if memories.held_by_review(who, mind, read):
                raise memories.Held(read, changed)
            return changed
        created = wanted.pop("created_at", None) or utcnow()
        return Memory(
            id=mem_id,
            category=category,
            key=key,
            user_id=who.user_id,
            created_at=created,
            updated_at=updated_at or created,
            **wanted,
        )

    return make


def _synapse_plan(mind: Mind, who: Principal, index: int, rec: SynapseRecord) -> Plan:
    mem_id = nuggets.id_for(mind.space, rec.category, rec.key)
    given: dict[str, Any] = {
        "content": rec.content,
        "tags": rec.tags,
        "priority": rec.priority,
        "expires_at": rec.expires_at,
        "valid_at": rec.valid_at,
    }
    if rec.confidence is not None:
        given["confidence"] = rec.confidence
    if rec.created_at is not None:
        given["created_at"] = rec.created_at
    if rec.updated_at is not None:
        given["updated_at"] = rec.updated_at
    # the history keeps its own numbers: the memory is the version after the newest kept one
    history = [v for v in rec.history if v.version < (rec.version or 1 << 30)]
    version = max([rec.version or 1, *(v.version + 1 for v in history)])
    return Plan(
        index=index,
        mem_id=mem_id,
        make=_importer(who, mind, mem_id, rec.category, rec.key, given),
        text=rec.content,
        version=version,
        history=history[: nuggets.HISTORY_KEPT],
        key_id=who.key_id,
    )


def _mem0_plan(mind: Mind, who: Principal, index: int, rec: Mem0Record) -> Plan:
    categories = rec.categories or []
    category = mem0_category(categories)
    key = mem0_key(rec.id)
    mem_id = nuggets.id_for(mind.space, category, key)
    given: dict[str, Any] = {
        "content": rec.memory,
        "tags": normalize_tags(categories)[:20],
        "valid_at": rec.created_at,
    }
    if rec.created_at is not None:
        given["created_at"] = rec.created_at
    if rec.updated_at is not None:
        given["updated_at"] = rec.updated_at
    return Plan(
        index=index,
        mem_id=mem_id,
        make=_importer(who, mind, mem_id, category, key, given),
        text=rec.memory,
        key_id=who.key_id,
    )
