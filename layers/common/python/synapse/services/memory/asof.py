"""The memories as they were at a moment (`as_of` on recall, context, GET /memory/{id} and GET /memory),
from their history: each memory's version current then, memories created later left out, expiry
judged then. A memory deleted since is gone (its history went with it).

What it costs is paid only when `as_of` is given: a memory not updated since `as_of` is as it was then
(no read); each one updated since costs one Query of its history (`nuggets.version_at`), run a few
at a time. A memory whose version of that moment is no longer kept (past the `HISTORY_KEPT` newest)
is left out: what it said then is not known.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from itertools import islice

from synapse.core.models.base import Category, Source
from synapse.core.models.memory import Memory, MemoryVersion
from synapse.core.state import per_container
from synapse.store import nuggets
from synapse.store.keys import Space

__all__ = ["as_of", "memory_at", "page", "versions_at"]


@per_container
def _pool() -> ThreadPoolExecutor:
    # the history Queries of one as_of read, a few in flight (each is a round trip of its own)
    return ThreadPoolExecutor(max_workers=8, thread_name_prefix="as-of")


def versions_at(space: Space, ids: Sequence[str], moment: datetime) -> dict[str, MemoryVersion | None]:
    """The version of each memory current at `moment` (None: not kept), one history Query each."""
    if len(ids) <= 1:
        return {i: nuggets.version_at(space, i, moment) for i in ids}
    found = _pool().map(lambda i: nuggets.version_at(space, i, moment), ids)
    return dict(zip(ids, found, strict=True))


def as_of(memory: Memory, version: MemoryVersion) -> Memory:
    """A memory as a kept version of it says (its category, key, creation and session stay)."""
    return memory.model_copy(
        update={
            "content": version.content,
            "tags": version.tags,
            "priority": version.priority,
            "source": version.source,
            "verified": version.verified,
            "confidence": version.confidence,
            "expires_at": version.expires_at,
            "updated_at": version.updated_at,
            "version": version.version,
            "valid_at": version.valid_at,
        }
    )


def memory_at(space: Space, memories: Sequence[Memory], moment: datetime) -> list[Memory | None]:
    """Each memory as it was at `moment`, in order; None where it did not exist yet, was expired
    then, or its version of then is no longer kept."""
    changed = [m.id for m in memories if m.created_at <= moment < m.updated_at]
    versions = versions_at(space, changed, moment)
    out: list[Memory | None] = []
    for m in memories:
        then: Memory | None = m
        if m.created_at > moment:
            then = None
        elif m.id in versions:
            version = versions[m.id]
            then = as_of(m, version) if version is not None else None
        out.append(then if then is not None and then.is_live(moment) else None)
    return out


def page(
    space: Space,
    moment: datetime,
    *,
    category: Category | None,
    tag: str | None,
    source: Source | None,
    verified: bool | None,
    limit: int,
    cursor: str | None,
) -> tuple[list[Memory], str | None]:
    """GET /memory?as_of=: the memories as they were at `moment` that match the filters (judged on
    that version), in key order, `limit` at most, and the cursor to the next page. The mind's
    memories are read `limit + 1` at a time, each chunk's history Queries run together."""
    found: list[Memory] = []
    last = ""
    items = nuggets.stored_after(space, nuggets.MemoryFilter(category=category), cursor)
    while chunk := list(islice(items, limit + 1)):
        then = memory_at(space, [st.memory for st, _ in chunk], moment)
        for (_, position), m in zip(chunk, then, strict=True):
            if m is None or not _matches(m, tag, source, verified):
                continue
            if len(found) == limit:  # one more than asked: there is a next page
                return found, last
            found.append(m)
            last = position
    return found, None


def _matches(m: Memory, tag: str | None, source: Source | None, verified: bool | None) -> bool:
    return (
        (tag is None or tag in m.tags)
        and (source is None or m.source == source)
        and (verified is None or m.verified == verified)
    )
