"""Context for one chat turn (POST /memory/context): identity, recall, the latest summary and the recent
messages, read concurrently, and the prompt block built from them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from synapse.core.models.base import Role
from synapse.core.models.chat import ContextIn, ContextOut, RecallIn, RecentMessage
from synapse.core.principal import Principal
from synapse.core.state import per_container
from synapse.services.memory import recall
from synapse.store import conversations
from synapse.store.minds import Mind

HEADINGS = ("Identity:", "Relevant memories:", "Session summary:", "Recent messages:")


@per_container
def _pool() -> ThreadPoolExecutor:
    # the session's reads run while recall embeds the query and scores (which has its own pool)
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="context")


def context(who: Principal, mind: Mind, body: ContextIn) -> ContextOut:
    """What recall answers for the query and limit, with the session's latest summary and last
    `recent` messages, and one prompt block of the parts that are not empty."""
    who.check_user_id(body.userId)
    space = mind.space
    summary = recent = None
    if body.sessionId is not None:
        summary = _pool().submit(conversations.latest_summary, space, body.sessionId)
        recent = _pool().submit(conversations.recent_messages, space, body.sessionId, body.recent)
    found = recall.recall(who, mind, RecallIn(query=body.query, limit=body.limit))
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
    out.prompt = prompt(out)
    return out


def prompt(parts: ContextOut) -> str:
    """The non-empty parts under their headings, in the order API.md gives, as plain text."""
    sections: list[tuple[str, list[str]]] = [
        (HEADINGS[0], [parts.identity] if parts.identity else []),
        (HEADINGS[1], [f"- {m.text}" for m in parts.memories]),
        (HEADINGS[2], [parts.summary] if parts.summary else []),
        (HEADINGS[3], [f"{m.role.value}: {m.content}" for m in parts.recent]),
    ]
    return "\n\n".join(f"{heading}\n" + "\n".join(lines) for heading, lines in sections if lines)
