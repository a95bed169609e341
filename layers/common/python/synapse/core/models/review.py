"""Review: an agent's change of a verified memory waits, as a proposal, for a person's yes
(GET /memory/proposals, accept, decline), and consolidation's answer."""

from enum import StrEnum

from pydantic import Field

from synapse.core.models.base import (
    Body,
    Category,
    Confidence,
    Content,
    DayOrMoment,
    Model,
    Priority,
    Tags,
    Timestamp,
    TimestampIn,
)


class ProposalKind(StrEnum):
    update = "update"
    delete = "delete"
    supersede = "supersede"


class Proposed(Model):
    """What the agent would have written (an update, or the memory that would supersede)."""

    content: str
    tags: list[str] = Field(default_factory=list)
    priority: Priority = Priority.normal
    confidence: float
    expires_at: Timestamp | None = None
    valid_at: Timestamp | None = None


class Proposal(Model):
    proposal_id: str
    memory_id: str = Field(description="The verified memory the proposal would change, delete or supersede")
    kind: ProposalKind
    base_version: int = Field(description="The memory's version the agent saw; accepting needs it current")
    proposed: Proposed | None = Field(description="null for a delete")
    source: str = "agent"
    key_id: str | None = None
    session_id: str | None = None
    created_at: Timestamp
    # where the proposed content would be written: the memory's own (category, key), or for a
    # supersede the other key of the memory that would replace it
    category: Category
    key: str


class ProposalAnswer(Model):
    """202: the write became a proposal; the verified memory is unchanged."""

    proposal: Proposal


class ProposalList(Model):
    proposals: list[Proposal]
    next_cursor: str | None = None


class AcceptIn(Body):
    """POST /memory/proposals/{proposalId}/accept: optional edits of the proposed memory."""

    content: Content | None = None
    tags: Tags | None = None
    priority: Priority | None = None
    confidence: Confidence | None = None
    expires_at: TimestampIn | None = None
    valid_at: DayOrMoment | None = None


class Consolidated(Model):
    """POST /minds/{mindId}/consolidate."""

    consolidated: int = Field(description="Memories summarized into a category's summary memory")
    merged: int = Field(description="Duplicates merged into the newer one")
    created: list[str] = Field(description="The ids of the summary memories written")
