"""Context for one chat turn (POST /memory/context): identity, recall, the latest summary and the recent
messages, read concurrently, and the prompt block built from them: the current time first, then the
parts, each memory with a `valid_at` dated in the timezone."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from zoneinfo import ZoneInfo

from synapse.core.models.base import Role, utcnow
from synapse.core.models.chat import ContextIn, ContextOut, RecalledMemory, RecallIn, RecentMessage
from synapse.core.principal import Principal
from synapse.core.state import per_container
from synapse.services.memory import recall
from synapse.store import conversations
from synapse.store.account.minds import Mind

HEADINGS = ("Identity:", "Relevant memories:", "Session summary:", "Recent messages:")


@per_container
def _pool() -> ThreadPoolExecutor:
    # the session's reads and the mind's timezone run while recall embeds the query and scores (which
    # has its own pool)
    return ThreadPoolExecutor(max_workers=3, thread_name_prefix="context")


def context(who: Principal, mind: Mind, body: ContextIn) -> ContextOut:
    """What recall answers for the query and limit, with the session's latest summary and last
    `recent` messages, and one prompt block: the current time, then the parts that are not empty."""
    who.check_user_id(body.userId)
    space = mind.space
    reference = body.reference_time or utcnow()
    # the prompt's timezone: the request's, else the mind's (its record read beside the rest)
    zone = _pool().submit(lambda: body.timezone or mind.timezone)
    summary = recent = None
    if body.sessionId is not None:
        summary = _pool().submit(conversations.latest_summary, space, body.sessionId)
        recent = _pool().submit(conversations.recent_messages, space, body.sessionId, body.recent)
    asked = RecallIn(
        query=body.query,
        limit=body.limit,
        reference_time=reference,
        timezone=body.timezone,
        as_of=body.as_of,
    )
    found = recall.recall(who, mind, asked, mind_zone=zone)
    chunk = summary.result() if summary is not None else None
    messages = [
        RecentMessage(role=Role(m.role), content=m.content, created_at=m.created_at)
        for m in (recent.result() if recent is not None else [])
    ]
    out = ContextOut(
        identity=found.identity,
        memories=found.memories,
        summary=chunk.summary if chunk is not None else None,
        recent=messages,
        prompt="",
    )
    out.prompt = prompt(out, reference, zone.result())
    return out


def prompt(parts: ContextOut, reference: datetime, timezone: str) -> str:
    """`Current time: <reference in timezone> (<timezone>)`, then the non-empty parts under their
    headings, in the order API.md gives, as plain text; a memory with a `valid_at` is dated."""
    zone = ZoneInfo(timezone)
    now = reference.astimezone(zone).strftime("%Y-%m-%d %H:%M")
    sections: list[tuple[str, list[str]]] = [
        (HEADINGS[0], [parts.identity] if parts.identity else []),
        (HEADINGS[1], [_memory_line(m, zone) for m in parts.memories]),
        (HEADINGS[2], [parts.summary] if parts.summary else []),
        (HEADINGS[3], [f"{m.role.value}: {m.content}" for m in parts.recent]),
    ]
    blocks = [f"Current time: {now} ({timezone})"]
    blocks += [f"{heading}\n" + "\n".join(lines) for heading, lines in sections if lines]
    return "\n\n".join(blocks)


def _memory_line(m: RecalledMemory, zone: ZoneInfo) -> str:
    if m.valid_at is None:
        return f"- {m.text}"
    return f"- ({m.valid_at.astimezone(zone):%Y-%m-%d}) {m.text}"
