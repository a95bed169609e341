"""Session summaries: on demand (POST /memory/summarize) and every SUMMARY_EVERY messages (events).

A chunk keeps when the messages it summarizes were said (`first_message_at`, `last_message_at`), and
the summarizer is told each message's time and the timezone, so that "yesterday" in a summary is
written as the day it meant."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from synapse.core.config import settings
from synapse.core.errors import NotFound, ValidationFailed
from synapse.core.models.base import SESSION_ID_RE, Role, utcnow
from synapse.core.models.chat import ChatMessage, SummarizeIn, SummaryChunk, SummaryList, SummaryOut
from synapse.core.principal import Principal
from synapse.services.account.providers import gemini_key_for
from synapse.store import conversations
from synapse.store.account.minds import Mind
from synapse.store.keys import DEFAULT_MIND, Space


def _recent(space: Space, session_id: str, upto: int) -> list[ChatMessage]:
    every = settings().summary_every
    stored = conversations.read_messages(space, session_id, upto - every + 1, upto)
    return [ChatMessage(role=Role(m.role), content=m.content, created_at=m.created_at) for m in stored]


def _previous(space: Space, session_id: str) -> str | None:
    chunks = conversations.list_summaries(space, session_id)
    return chunks[-1].summary if chunks else None


NOTHING_TO_REMEMBER = {
    "th": "ไม่มีเรื่องที่ต้องจำ มีแต่คำทักทายหรือคำตอบรับสั้น ๆ",
    "en": "Nothing to remember: only greetings and short acknowledgements.",
}


def _summarize(space: Space, session_id: str, messages: Sequence[ChatMessage], timezone: str) -> str:
    # here: GET /memory/summaries reads chunks and needs no model code
    from synapse.ai import llm, transient

    summarizer = llm.get_summarizer(gemini_key_for(space.user_id))
    text = summarizer.summarize(messages, _previous(space, session_id), timezone=timezone).strip()
    if text:
        return text
    # only transient turns ("ok", "ขอบคุณ", "555"): a chunk still marks the span, and says so
    thai = any(transient.has_thai(m.content) for m in messages)
    return NOTHING_TO_REMEMBER["th" if thai else "en"]


def _span(messages: Sequence[ChatMessage]) -> tuple[datetime, datetime] | None:
    said = [m.created_at for m in messages if m.created_at is not None]
    return (min(said), max(said)) if said else None


def summarize(who: Principal, mind: Mind, body: SummarizeIn) -> SummaryOut:
    """POST /memory/summarize: the given messages (said when the request arrived unless they say
    otherwise), or the session's last SUMMARY_EVERY stored ones, as a new chunk."""
    who.check_user_id(body.userId)
    now = utcnow()
    space, session_id = mind.space, body.sessionId
    count = conversations.session_count(space, session_id)
    if body.messages is None:
        messages = _recent(space, session_id, count)
        if not messages:
            raise NotFound("This session has no stored messages to summarize.")
    else:
        messages = [m if m.created_at else m.model_copy(update={"created_at": now}) for m in body.messages]
    # the mind's record is read only when the body names no timezone
    text = _summarize(space, session_id, messages, body.timezone or mind.timezone)
    chunk = conversations.add_summary(
        space, session_id, summary=text, msg_count=len(messages), now=now, span=_span(messages)
    )
    assert chunk is not None  # no boundary: always written
    return SummaryOut(summary=chunk.summary, chunk_id=chunk.chunk_id)


def chunk_out(chunk: conversations.Summary) -> SummaryChunk:
    return SummaryChunk(
        chunk_id=chunk.chunk_id,
        summary=chunk.summary,
        msg_count=chunk.msg_count,
        created_at=chunk.created_at,
        first_message_at=chunk.first_message_at,
        last_message_at=chunk.last_message_at,
    )


def chunks(mind: Mind, session_id: str) -> SummaryList:
    """GET /memory/summaries/{sessionId}: the session's chunks, oldest first."""
    space = mind.space
    if not SESSION_ID_RE.match(session_id):
        raise ValidationFailed.at(["path", "sessionId"], "must be 1-128 letters, digits, '.', '_' or '-'")
    return SummaryList(summaries=[chunk_out(c) for c in conversations.list_summaries(space, session_id)])


def summary_due(
    user_id: str, session_id: str, msg_count: int, mind_id: str = DEFAULT_MIND
) -> conversations.Summary | None:
    """The EventBridge consumer's work: one chunk per boundary, however often the event arrives; the
    messages' stored times, read in the mind's timezone."""
    space = Space(user_id, mind_id)
    if conversations.session_boundary_done(space, session_id, msg_count):
        return None
    messages = _recent(space, session_id, msg_count)
    if not messages:
        return None
    text = _summarize(space, session_id, messages, Mind(space).timezone)
    return conversations.add_summary(
        space,
        session_id,
        summary=text,
        msg_count=len(messages),
        now=utcnow(),
        span=_span(messages),
        boundary=msg_count,
    )
