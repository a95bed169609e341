"""Session summaries: on demand (POST /memory/summarize) and every SUMMARY_EVERY messages (events)."""

from __future__ import annotations

from collections.abc import Sequence

from synapse.core.config import settings
from synapse.core.errors import NotFound, ValidationFailed
from synapse.core.models.base import SESSION_ID_RE, Role, utcnow
from synapse.core.models.chat import ChatMessage, SummarizeIn, SummaryChunk, SummaryList, SummaryOut
from synapse.core.principal import Principal
from synapse.services.account.providers import gemini_key_for
from synapse.store import conversations
from synapse.store.keys import DEFAULT_MIND, Space
from synapse.store.minds import Mind


def _recent(space: Space, session_id: str, upto: int) -> list[ChatMessage]:
    every = settings().summary_every
    stored = conversations.read_messages(space, session_id, upto - every + 1, upto)
    return [ChatMessage(role=Role(m.role), content=m.content) for m in stored]


def _previous(space: Space, session_id: str) -> str | None:
    chunks = conversations.list_summaries(space, session_id)
    return chunks[-1].summary if chunks else None


NOTHING_TO_REMEMBER = {
    "th": "ไม่มีเรื่องที่ต้องจำ มีแต่คำทักทายหรือคำตอบรับสั้น ๆ",
    "en": "Nothing to remember: only greetings and short acknowledgements.",
}


def _summarize(space: Space, session_id: str, messages: Sequence[ChatMessage]) -> str:
    # here: GET /memory/summaries reads chunks and needs no model code
    from synapse.ai import llm, transient

    summarizer = llm.get_summarizer(gemini_key_for(space.user_id))
    text = summarizer.summarize(messages, _previous(space, session_id)).strip()
    if text:
        return text
    # only transient turns ("ok", "ขอบคุณ", "555"): a chunk still marks the span, and says so
    thai = any(transient.has_thai(m.content) for m in messages)
    return NOTHING_TO_REMEMBER["th" if thai else "en"]


def summarize(who: Principal, mind: Mind, body: SummarizeIn) -> SummaryOut:
    """POST /memory/summarize: the given messages, or the session's last SUMMARY_EVERY stored ones, as
    a new chunk."""
    who.check_user_id(body.userId)
    space, session_id, messages = mind.space, body.sessionId, body.messages
    count = conversations.session_count(space, session_id)
    if messages is None:
        messages = _recent(space, session_id, count)
        if not messages:
            raise NotFound("This session has no stored messages to summarize.")
    text = _summarize(space, session_id, messages)
    chunk = conversations.add_summary(space, session_id, summary=text, msg_count=len(messages), now=utcnow())
    assert chunk is not None  # no boundary: always written
    return SummaryOut(summary=chunk.summary, chunk_id=chunk.chunk_id)


def chunks(mind: Mind, session_id: str) -> SummaryList:
    """GET /memory/summaries/{sessionId}: the session's chunks, oldest first."""
    space = mind.space
    if not SESSION_ID_RE.match(session_id):
        raise ValidationFailed.at(["path", "sessionId"], "must be 1-128 letters, digits, '.', '_' or '-'")
    return SummaryList(
        summaries=[
            SummaryChunk(
                chunk_id=c.chunk_id, summary=c.summary, msg_count=c.msg_count, created_at=c.created_at
            )
            for c in conversations.list_summaries(space, session_id)
        ]
    )


def summary_due(
    user_id: str, session_id: str, msg_count: int, mind_id: str = DEFAULT_MIND
) -> conversations.Summary | None:
    """The EventBridge consumer's work: one chunk per boundary, however often the event arrives."""
    space = Space(user_id, mind_id)
    if conversations.session_boundary_done(space, session_id, msg_count):
        return None
    messages = _recent(space, session_id, msg_count)
    if not messages:
        return None
    text = _summarize(space, session_id, messages)
    return conversations.add_summary(
        space, session_id, summary=text, msg_count=len(messages), now=utcnow(), boundary=msg_count
    )
