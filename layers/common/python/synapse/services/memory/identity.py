"""The identity line: "ชื่อ X, ชอบ Dark theme, ใช้ MCP เป็นหลัก, พูดไทย", built from the user's live
identity and preference memories and stored, so that reading it is one GetItem.

It is rebuilt whenever such a memory is written or deleted, and it records when it goes stale: the
soonest `expires_at` among the memories it was built from. A read past that moment computes the line
afresh (without writing it), so an expired memory never shows through the identity line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from synapse.core.models.base import PRIORITY_RANK, Category, utcnow
from synapse.core.models.memory import IdentityOut, Memory
from synapse.core.principal import Principal
from synapse.store import conversations, nuggets
from synapse.store.keys import Space
from synapse.store.minds import Mind

IDENTITY_CATEGORIES = (Category.identity, Category.preference)
IDENTITY_MAX_ITEMS = 12
IDENTITY_MAX_CHARS = 600


def identity_line(memories: Sequence[Memory]) -> str | None:
    """Identity facts first, then preferences; by priority, then most recently updated."""
    ranked = sorted(
        memories,
        key=lambda m: (
            m.category != Category.identity,
            -PRIORITY_RANK[m.priority],
            -m.updated_at.timestamp(),
            m.key,
        ),
    )
    parts: list[str] = []
    for m in ranked[:IDENTITY_MAX_ITEMS]:
        text = " ".join(m.content.split()).rstrip(".。")
        if text and text not in parts:
            parts.append(text)
    line = ", ".join(parts)
    if len(line) > IDENTITY_MAX_CHARS:
        line = line[: IDENTITY_MAX_CHARS - 1].rsplit(", ", 1)[0] + "…"
    return line or None


def _stale_at(memories: Sequence[Memory]) -> int | None:
    # any of them expiring changes the line (one leaves it, or makes room for another)
    ends = [int(m.expires_at.timestamp()) for m in memories if m.expires_at is not None]
    return min(ends) if ends else None


def rebuild_identity(space: Space, memories: Iterable[Memory] | None = None) -> bool:
    """Recompute and store the identity line from live identity and preference memories; True if the
    line changed. For writers only. `memories` are all of the mind's memories when the caller already
    has them (one read saved)."""
    now = utcnow()
    live = _live(space, memories, now)
    line, stale_at = identity_line(live), _stale_at(live)
    stored = conversations.get_identity(space)
    if (line, stale_at) != stored:
        conversations.put_identity(space, line, now, stale_at=stale_at)
    return line != stored[0]


def identity_of(who: Principal, mind: Mind, user_id: str) -> IdentityOut:
    """GET /memory/identity/{userId}: the caller's own identity line only (of the mind it acts in)."""
    who.check_user_id(user_id)
    return IdentityOut(userId=who.user_id, identity=current(mind.space))


def current(space: Space) -> str | None:
    """The identity line as it is now: computed afresh if a memory it was made from has expired.

    Nothing is written here: the readers that call this (GET /memory/identity, POST /memory/recall)
    have read-only IAM policies. The stored line is replaced by the next write of an identity or
    preference memory; until then a stale line costs each read one query of the user's memories.
    """
    now = utcnow()
    line, stale_at = conversations.get_identity(space)
    if stale_at is not None and stale_at <= now.timestamp():
        line = identity_line(_live(space, None, now))
    return line


def _live(space: Space, memories: Iterable[Memory] | None, now: datetime) -> list[Memory]:
    """The mind's live identity and preference memories (read when the caller has none at hand)."""
    if memories is None:
        memories = nuggets.query(space, nuggets.MemoryFilter(live_at=now))[0]
    return [m for m in memories if m.category in IDENTITY_CATEGORIES and m.is_live(now)]
