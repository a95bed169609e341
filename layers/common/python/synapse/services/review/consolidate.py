"""Consolidation (the memory model: low priority "may be summarized"): POST /minds/{mindId}/consolidate
and the daily run over the minds written to since their last one.

Rules, no model call: two unverified memories of one category whose content is the same once case,
spacing and Unicode form are ignored are merged (the newer supersedes the older); unverified
low-priority memories not updated for CONSOLIDATE_AFTER_DAYS are summarized extractively, per
category, into one memory (`consolidated_<category>`: source agent, priority low, the union of their
tags) that supersedes them, or folded into that category's summary when it exists. Every change is
a version through the one write path (restorable); verified memories are never touched.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta

from synapse.ai.summaries import ExtractiveSummarizer
from synapse.core.config import settings
from synapse.core.errors import UpstreamUnavailable
from synapse.core.models.base import MAX_TAGS, Category, Change, Priority, Role, normalize_tags, utcnow
from synapse.core.models.chat import ChatMessage
from synapse.core.models.memory import Memory
from synapse.core.models.review import Consolidated
from synapse.core.observability import logger
from synapse.core.principal import Principal
from synapse.services.account import minds
from synapse.services.memory import memories, writers
from synapse.services.memory.identity import IDENTITY_CATEGORIES, rebuild_identity
from synapse.store import changelog, nuggets
from synapse.store.keys import Space

SUMMARY_KEY = "consolidated_{category}"
SUMMARY_MAX_CHARS = 2000
BATCH = 25  # memories per save (each write is up to three transaction actions)


def same_content(text: str) -> str:
    """Content as merging compares it: Unicode form (NFKC), case and spacing ignored."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def consolidate_mind(who: Principal, mind_id: str) -> Consolidated:
    """POST /minds/{mindId}/consolidate (users only; 404 for a mind the user does not have)."""
    who.require_user()
    minds.check_exists(who.user_id, mind_id)
    return consolidate(Space(who.user_id, mind_id))


def consolidate(space: Space) -> Consolidated:
    """Merge and summarize one mind's unverified memories (see the module's rules): one read of the
    mind, the plan, then its writes in transactions of BATCH memories."""
    now = utcnow()
    live = nuggets.stored(space, nuggets.MemoryFilter(live_at=now))
    writes, out = plan(space, live, now)
    # the summaries (the only new text) are embedded: one call each, with the user's key if stored
    writes = [
        replace(w, vector=memories.embed_document(space.user_id, w.memory.content))
        if w.memory.id in out.created
        else w
        for w in writes
    ]
    _save(space, writes)
    if any(w.memory.category in IDENTITY_CATEGORIES for w in writes):
        rebuild_identity(space)
    return out


def plan(
    space: Space, stored: list[nuggets.Stored], now: datetime
) -> tuple[list[nuggets.Write], Consolidated]:
    """What consolidation writes (no I/O: the summaries' vectors are added by `consolidate`)."""
    live = [st for st in stored if not st.memory.verified and st.memory.is_live(now)]
    hidden: set[str] = set()
    writes: list[nuggets.Write] = []
    # 1. duplicates: the newest of each group supersedes the others
    groups: dict[tuple[str, str], list[nuggets.Stored]] = defaultdict(list)
    for st in live:
        groups[(st.memory.category.value, same_content(st.memory.content))].append(st)
    merged = 0
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda st: (st.memory.updated_at, st.memory.id))
        newest = group[-1].memory
        for st in group[:-1]:
            writes.append(_hide(st, newest.id, now, Change.superseded))
            hidden.add(st.memory.id)
            merged += 1
    # 2. old low-priority memories: one summary per category
    cutoff = now - timedelta(days=settings().consolidate_after_days)
    by_category: dict[Category, list[nuggets.Stored]] = defaultdict(list)
    summaries: dict[Category, nuggets.Stored] = {}
    for st in live:
        m = st.memory
        if m.key == SUMMARY_KEY.format(category=m.category.value):
            summaries[m.category] = st
        elif m.id not in hidden and m.priority is Priority.low and m.updated_at < cutoff:
            by_category[m.category].append(st)
    created: list[str] = []
    consolidated = 0
    for category, members in sorted(by_category.items()):
        previous = summaries.get(category)
        if len(members) < 2 and previous is None:
            continue  # one memory alone is its own summary
        summary = _summary(space, category, members, previous, now)
        writes.append(nuggets.Write(memory=summary, read=previous, kind=Change.consolidated))
        for st in members:
            writes.append(_hide(st, summary.id, now, Change.consolidated))
        consolidated += len(members)
        created.append(summary.id)
    return writes, Consolidated(consolidated=consolidated, merged=merged, created=created)


def _hide(st: nuggets.Stored, by: str, now: datetime, kind: Change) -> nuggets.Write:
    memory = st.memory.model_copy(
        update={"superseded_by": by, "updated_at": now, "version": nuggets.next_version(st)}
    )
    return nuggets.Write(memory=memory, read=st, kind=kind)


def _summary(
    space: Space,
    category: Category,
    members: list[nuggets.Stored],
    previous: nuggets.Stored | None,
    now: datetime,
) -> Memory:
    """The category's summary memory: the previous summary and the members, extractively."""
    ordered = sorted(members, key=lambda st: (st.memory.updated_at, st.memory.id))
    texts = ([previous.memory.content] if previous is not None else []) + [
        st.memory.content for st in ordered
    ]
    said = [ChatMessage(role=Role.user, content=t) for t in texts]
    content = (
        ExtractiveSummarizer(max_chars=SUMMARY_MAX_CHARS).summarize(said) or texts[-1][:SUMMARY_MAX_CHARS]
    )
    tags = _union(
        ([previous.memory.tags] if previous is not None else []) + [st.memory.tags for st in ordered]
    )
    key = SUMMARY_KEY.format(category=category.value)
    fields = {
        "content": content,
        "tags": tags,
        "priority": Priority.low,
        **writers.EXTRACTION.stamp(None),
        "updated_at": now,
        "superseded_by": None,
        "expires_at": None,
    }
    if previous is not None:
        memory = previous.memory.model_copy(update=fields)
    else:
        memory = Memory(
            id=nuggets.id_for(space, category, key),
            category=category,
            key=key,
            user_id=space.user_id,
            created_at=now,
            **fields,
        )
    return memory.model_copy(update={"version": nuggets.next_version(previous), "mind_id": space.mind_id})


def _union(tag_lists: Iterable[list[str]]) -> list[str]:
    return normalize_tags([t for tags in tag_lists for t in tags])[:MAX_TAGS]


def _save(space: Space, writes: list[nuggets.Write]) -> None:
    """The writes in batches, each conditional on what was read: a memory another writer changed
    meanwhile is left as that writer left it (the next run sees it again)."""
    for start in range(0, len(writes), BATCH):
        batch = writes[start : start + BATCH]
        try:
            nuggets.save(space, batch)
        except nuggets.LostRace as lost:
            keep = [w for w in batch if w.memory.id not in set(lost.ids)]
            if keep and len(keep) < len(batch):
                try:
                    nuggets.save(space, _without_lost_targets(keep, set(lost.ids)))
                except nuggets.LostRace:
                    logger.warning("consolidation skipped memories written meanwhile")


def _without_lost_targets(writes: list[nuggets.Write], lost: set[str]) -> list[nuggets.Write]:
    """Writes that do not hide a memory behind one whose own write lost (it would point at nothing new)."""
    return [w for w in writes if w.memory.superseded_by not in lost]


# --- the daily run ----------------------------------------------------------------------------------


def daily() -> dict[str, int]:
    """Consolidate every mind written to since its last consolidation; returns counts for the log."""
    minds_done = total = merged = 0
    for space, seq in changelog.written_since_consolidation():
        try:
            out = consolidate(space)
        except UpstreamUnavailable:  # a busy mind: the next day's run takes it
            logger.warning("consolidation of a mind was skipped (busy)")
            continue
        changelog.mark_consolidated(space, changelog.read(space).seq if out.created or out.merged else seq)
        minds_done += 1
        total += out.consolidated
        merged += out.merged
    return {"minds": minds_done, "consolidated": total, "merged": merged}
