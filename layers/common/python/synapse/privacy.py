"""A user's data as a whole: export everything, or delete everything."""

from __future__ import annotations

from typing import Any

from synapse import store
from synapse.models import ApiKeyInfo, ExportOut, ProviderInfo, Scope, utcnow


def export(user_id: str) -> ExportOut:
    """Every item of the user's partition, grouped; vectors and ciphertexts left out."""
    out = ExportOut(memories=[], identity=None, summaries=[], sessions=[])
    now = int(utcnow().timestamp())
    sessions: dict[str, dict[str, Any]] = {}

    def session(sid: str) -> dict[str, Any]:
        return sessions.setdefault(sid, {"session_id": sid, "msg_count": 0, "chunks": 0, "messages": []})

    for item in store.user_items(user_id):
        sk: str = item["sk"]
        kind, _, rest = sk.partition(":")
        if kind == "nug":
            out.memories.append(store.memory_from_plain(user_id, item))
        elif sk == "identity":
            out.identity = item.get("text")
        elif kind == "ses":
            entry = session(rest)
            entry["msg_count"] = int(item.get("msg_count", 0))
            entry["chunks"] = int(item.get("chunks", 0))
        elif kind == "msg":
            if int(item.get("ttl", 0)) <= now:
                continue  # expired: DynamoDB deletes it late
            sid, _, seq = rest.rpartition(":")
            session(sid)["messages"].append(
                {
                    "seq": int(seq),
                    "role": item["role"],
                    "content": item["content"],
                    "created_at": item["created_at"],
                }
            )
        elif kind == "sum":
            sid = rest.rpartition(":")[0]
            out.summaries.append(
                {
                    "session_id": sid,
                    "chunk_id": store.chunk_id(sk),
                    "summary": item["summary"],
                    "msg_count": int(item["msg_count"]),
                    "created_at": item["created_at"],
                }
            )
        elif kind == "apikey":
            out.keys.append(
                ApiKeyInfo(
                    key_id=item["key_id"],
                    name=item["name"],
                    scopes=[Scope(s) for s in item.get("scopes", [])],
                    hint=item.get("hint", ""),
                    created_at=item["created_at"],
                )
            )
        elif kind == "provider":
            out.providers.append(
                ProviderInfo(provider=rest, hint=item["hint"], updated_at=item["updated_at"])
            )
    out.sessions = list(sessions.values())
    return out


def delete(user_id: str) -> int:
    return store.delete_user(user_id)
