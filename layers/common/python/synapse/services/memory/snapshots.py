"""SnapshotDue (from a reader that found a mind's snapshot missing or behind): the mind packed as it
is now into its snapshot, in the background (functions/snapshot_writer), never in a request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from synapse.core.models.base import DEFAULT_MIND
from synapse.search import cache
from synapse.store.keys import Space, is_mind_id


def snapshot_due(detail: Mapping[str, Any]) -> str:
    """Write the snapshot the event asks for (`detail`: userId, mindId, modelKey, and the epoch and
    seq where the reader found the mind: a snapshot there already is current; otherwise the writer
    packs the mind as it is when it runs). Returns what happened (`cache.write_snapshot`), or
    "refused" for an event that names no mind."""
    user_id, mind_id = detail.get("userId"), detail.get("mindId") or DEFAULT_MIND
    model_key, epoch, seq = detail.get("modelKey"), detail.get("epoch"), detail.get("seq")
    if not isinstance(user_id, str) or not user_id or not isinstance(mind_id, str) or not is_mind_id(mind_id):
        return "refused"
    if model_key is not None and not isinstance(model_key, str):
        return "refused"
    if not isinstance(epoch, str) or not isinstance(seq, int) or isinstance(seq, bool):
        epoch, seq = None, None
    return cache.write_snapshot(Space(user_id, mind_id), model_key or None, epoch, seq)
