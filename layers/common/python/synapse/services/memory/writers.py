"""Who wrote a memory, and what that makes it: the one place every write path (POST /memory, PUT,
restore, ingest, the MCP `remember` tool) takes source, verified and confidence from.

- source: `user` for a person (a JWT), `agent` for an API key. Ingest writes as an agent whoever
  calls: the service extracted the memory on the caller's behalf, nobody stated it.
- verified: only a person's write is verified; an agent's write (re)sets it to false, so an agent
  that changes a verified memory leaves it unverified.
- confidence: what the write sends, else 1.0 for a person and 0.7 for an agent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from synapse.core.models.base import Source
from synapse.core.principal import Principal

USER_CONFIDENCE = 1.0
AGENT_CONFIDENCE = 0.7


@dataclass(frozen=True)
class Writer:
    source: Source

    @property
    def verified(self) -> bool:
        return self.source is Source.user

    @property
    def default_confidence(self) -> float:
        return USER_CONFIDENCE if self.source is Source.user else AGENT_CONFIDENCE

    def stamp(self, confidence: float | None) -> dict[str, Any]:
        """What a write of this writer sets on the memory, whatever else it changes."""
        return {
            "source": self.source,
            "verified": self.verified,
            "confidence": self.default_confidence if confidence is None else confidence,
        }


def of(who: Principal) -> Writer:
    """The caller as the writer of what it sends."""
    return Writer(who.source)


EXTRACTION = Writer(Source.agent)  # what ingest extracts from a conversation
