"""The writer rules (services/memory/writers.py): who wrote a memory, and what that makes it."""

from __future__ import annotations

from synapse.core.models.base import Source
from synapse.core.principal import ALL_SCOPES, Principal
from synapse.services.memory import writers

PERSON = Principal("alice", "user", frozenset(ALL_SCOPES))
AGENT = Principal("alice", "agent", frozenset(ALL_SCOPES), key_id="k1")


def test_a_persons_write_is_verified_and_fully_confident_unless_it_says_otherwise() -> None:
    assert writers.of(PERSON).stamp(None) == {"source": Source.user, "verified": True, "confidence": 1.0}
    assert writers.of(PERSON).stamp(0.4)["confidence"] == 0.4


def test_an_agents_write_is_unverified_whatever_it_changes() -> None:
    # (an agent that updates a verified memory leaves it unverified)
    assert writers.of(AGENT).stamp(None) == {"source": Source.agent, "verified": False, "confidence": 0.7}
    assert writers.of(AGENT).stamp(0.95) == {"source": Source.agent, "verified": False, "confidence": 0.95}


def test_ingest_writes_as_an_agent_whoever_calls() -> None:
    # (a person's own ingest too: the service extracted the memory, nobody stated it)
    assert writers.EXTRACTION.stamp(0.9) == {"source": Source.agent, "verified": False, "confidence": 0.9}
