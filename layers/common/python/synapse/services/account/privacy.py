"""A user's data as a whole: export everything, or delete everything."""

from __future__ import annotations

from typing import Any

from synapse.core.models.account import ExportOut, ProviderInfo
from synapse.core.models.base import iso
from synapse.services.account.auth import key_info
from synapse.services.account.minds import out
from synapse.store.account import users
from synapse.store.conversations import Summary
from synapse.store.keys import DEFAULT_MIND


def export(user_id: str) -> ExportOut:
    """Everything stored for the user; vectors and ciphertexts left out, keys as hints only. Sessions
    and summaries carry their mind: one session name may be used in several minds."""
    data = users.everything(user_id)
    return ExportOut(
        memories=data.memories,
        history=data.history,
        identity=data.identity.get(DEFAULT_MIND),
        identities=data.identity,
        # each mind with its settings (timezone, review_agent_changes)
        minds=[out(m) for m in sorted(data.minds, key=lambda m: (m.created_at, m.mind_id))],
        summaries=[summary_out(mind_id, session_id, chunk) for mind_id, session_id, chunk in data.summaries],
        sessions=[
            {
                "mind_id": s.mind_id,
                "session_id": s.session_id,
                "msg_count": s.msg_count,
                "chunks": s.chunks,
                "messages": [
                    {"seq": m.seq, "role": m.role, "content": m.content, "created_at": iso(m.created_at)}
                    for m in s.messages
                ],
            }
            for s in data.sessions
        ],
        keys=[key_info(k) for k in data.keys],
        providers=[
            ProviderInfo(provider=p.provider, hint=p.hint, updated_at=p.updated_at) for p in data.providers
        ],
    )


def summary_out(mind_id: str, session_id: str, chunk: Summary) -> dict[str, Any]:
    """A summary chunk as the exports show it (with its mind: one session name may be in several)."""
    return {
        "mind_id": mind_id,
        "session_id": session_id,
        "chunk_id": chunk.chunk_id,
        "summary": chunk.summary,
        "msg_count": chunk.msg_count,
        "created_at": iso(chunk.created_at),
        "first_message_at": iso(chunk.first_message_at) if chunk.first_message_at else None,
        "last_message_at": iso(chunk.last_message_at) if chunk.last_message_at else None,
    }


def delete(user_id: str) -> int:
    return users.delete_user(user_id)
