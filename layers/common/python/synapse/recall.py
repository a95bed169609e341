"""Recall: the plain-text rendering for an LLM's context (semantic recall joins it later)."""

from __future__ import annotations

from synapse.models import Memory


def render_text(user_id: str, matching: list[Memory], limit: int) -> str:
    """The `GET /memory/recall` text (API.md): a header, then one numbered block per memory.

    `matching` is every live memory that matched, already sorted (priority, then most recently
    updated); the header counts all of them, the first `limit` are shown.
    """
    verified = sum(1 for m in matching if m.verified)
    lines = [
        f"Mind: {user_id}",
        f"Memories: {len(matching)} total ({verified} verified, {len(matching) - verified} unverified)",
    ]
    for n, m in enumerate(matching[:limit], start=1):
        state = "verified" if m.verified else "unverified"
        lines.append("")
        lines.append(f"[{n:03d}] {m.category.value} ({m.priority.value.upper()}) [{state}] {m.key}")
        lines.extend(f"    {line}" for line in m.content.splitlines() or [""])
        if m.tags:
            lines.append(f"    Tags: {', '.join(m.tags)}")
    return "\n".join(lines) + "\n"
