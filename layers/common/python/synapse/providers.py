"""Users' own provider keys (bring your own Gemini key)."""

from __future__ import annotations


def gemini_key_for(user_id: str) -> str | None:
    """The user's own Gemini key, if they stored one (issue 4 fills this in); else the service key."""
    return None
