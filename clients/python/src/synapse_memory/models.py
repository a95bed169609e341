"""The answers of the API as pydantic models, with the contract's field names (API.md).

Every model keeps fields the server adds later (`extra="allow"`), and text enums are plain `str` in
answers, so a newer server never breaks an older client. Timestamps are `datetime` in UTC.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ApiKey",
    "ApiKeyCreated",
    "Category",
    "Consolidated",
    "ContextResult",
    "DeliveryAttempt",
    "Export",
    "ExportJob",
    "ExportStarted",
    "Health",
    "IdentityResult",
    "IngestResult",
    "Memory",
    "MemoryChange",
    "MemoryChanges",
    "MemoryPage",
    "MemoryVersion",
    "Message",
    "Mind",
    "MindCreated",
    "Priority",
    "Proposal",
    "ProposalPage",
    "Proposed",
    "Provider",
    "RecallResult",
    "RecalledMemory",
    "RecentMessage",
    "Role",
    "Scope",
    "ScoredMemory",
    "SummaryChunk",
    "SummaryResult",
    "Webhook",
    "WebhookCreated",
]

Category = Literal["identity", "preference", "fact", "project", "skill", "mistake", "context", "note"]
Priority = Literal["low", "normal", "high", "critical"]
Role = Literal["user", "assistant", "system", "tool"]
Scope = Literal["memory:read", "memory:write"]


class Answer(BaseModel):
    """Base of every answer model: unknown fields are kept, names populate by field or alias."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Memory(Answer):
    """The memory object."""

    id: str
    category: str
    key: str
    content: str
    tags: list[str] = Field(default_factory=list)
    priority: str = "normal"
    source: str
    verified: bool
    confidence: float
    expires_at: datetime | None = None
    user_id: str
    session_id: str | None = None
    created_at: datetime
    updated_at: datetime
    version: int = 1
    mind_id: str = "default"
    valid_at: datetime | None = None  # when what it says happens or became true (None: not known)
    # Review: the memory that replaced this one (hidden from live views), or None
    superseded_by: str | None = None


class ScoredMemory(Memory):
    """A memory found by `GET /memory/search`, with its rank score."""

    score: float


class MemoryPage(Answer):
    """One page of `GET /memory` (or of by-tag when paged): pass `next_cursor` for the next one."""

    memories: list[Memory]
    next_cursor: str | None = None


class MemoryVersion(Answer):
    """One kept version of a memory (`GET /memory/{id}/history`)."""

    version: int
    content: str
    tags: list[str] = Field(default_factory=list)
    priority: str
    source: str
    verified: bool
    confidence: float
    expires_at: datetime | None = None
    updated_at: datetime
    change: str
    valid_at: datetime | None = None


class RecalledMemory(Answer):
    """A memory as recall and context answer it: `text` is its content, `type` its category."""

    id: str
    text: str
    type: str
    key: str
    score: float
    priority: str
    verified: bool
    created_at: datetime
    valid_at: datetime | None = None


class RecallResult(Answer):
    """`POST /memory/recall`."""

    memories: list[RecalledMemory]
    identity: str | None = None


class RecentMessage(Answer):
    role: str
    content: str
    created_at: datetime


class ContextResult(Answer):
    """`POST /memory/context`: what one chat turn needs; `prompt` is ready for a system prompt."""

    identity: str | None = None
    memories: list[RecalledMemory] = Field(default_factory=list)
    summary: str | None = None
    recent: list[RecentMessage] = Field(default_factory=list)
    prompt: str


class IngestResult(Answer):
    """`POST /memory/ingest`."""

    nuggets_created: int
    nuggets_updated: int
    skipped_transient: int
    identity_updated: bool
    nuggets: list[Memory] = Field(default_factory=list)
    overwrote_user: list[str] = Field(default_factory=list)
    # Review: nuggets that would have changed a verified memory wait here for a person
    proposed: list[Proposal] = Field(default_factory=list)


class SummaryResult(Answer):
    """`POST /memory/summarize`."""

    summary: str
    chunk_id: str


class SummaryChunk(Answer):
    """One of `GET /memory/summaries/{sessionId}`."""

    chunk_id: str
    summary: str
    msg_count: int
    created_at: datetime
    first_message_at: datetime | None = None  # when the messages it summarizes were said
    last_message_at: datetime | None = None


class IdentityResult(Answer):
    """`GET /memory/identity/{userId}`; `user_id` is the answer's `userId`."""

    user_id: str = Field(alias="userId")
    identity: str | None = None


class MindCreated(Answer):
    """`POST /minds` and `PATCH /minds/{mindId}`: the mind and its settings."""

    mind_id: str
    name: str
    description: str | None = None
    created_at: datetime
    # settings (PATCH /minds/{mindId})
    timezone: str = "UTC"
    review_agent_changes: bool = True


class Proposed(Answer):
    """What an agent would have written (a proposal's `proposed`)."""

    content: str
    tags: list[str] = Field(default_factory=list)
    priority: str = "normal"
    confidence: float
    expires_at: datetime | None = None
    valid_at: datetime | None = None


class Proposal(Answer):
    """Review: an agent's change of a verified memory, waiting for a person (202 answers,
    `GET /memory/proposals`)."""

    proposal_id: str
    memory_id: str
    kind: str  # update | delete | supersede
    base_version: int
    proposed: Proposed | None = None
    source: str = "agent"
    key_id: str | None = None
    session_id: str | None = None
    created_at: datetime
    category: str | None = None
    key: str | None = None


class ProposalPage(Answer):
    proposals: list[Proposal]
    next_cursor: str | None = None


class Consolidated(Answer):
    """`POST /minds/{mindId}/consolidate`."""

    consolidated: int
    merged: int
    created: list[str] = Field(default_factory=list)


class Mind(MindCreated):
    """One of `GET /minds`, with its number of memories."""

    memories: int = 0


class ApiKeyCreated(Answer):
    """`POST /keys`: `key` is the plain key, shown this once."""

    key_id: str
    key: str
    name: str
    scopes: list[str]
    created_at: datetime
    mind_id: str = "default"

    def __repr__(self) -> str:  # the plain key stays out of reprs and logs
        return (
            f"ApiKeyCreated(key_id={self.key_id!r}, name={self.name!r}, scopes={self.scopes!r}, "
            f"mind_id={self.mind_id!r}, key='…')"
        )

    __str__ = __repr__


class ApiKey(Answer):
    """One of `GET /keys`: a hint, never the key."""

    key_id: str
    name: str
    scopes: list[str]
    hint: str
    created_at: datetime
    mind_id: str = "default"


class Provider(Answer):
    """A stored provider key, as a hint (`PUT /providers/{p}`, `GET /providers`)."""

    provider: str
    hint: str
    updated_at: datetime


class Health(Answer):
    status: str


class Export(Answer):
    """`GET /me/export`: everything stored for the user (keys and provider keys as hints only)."""

    memories: list[Memory] = Field(default_factory=list)
    history: dict[str, list[MemoryVersion]] = Field(default_factory=dict)
    identity: str | None = None
    summaries: list[dict[str, Any]] = Field(default_factory=list)
    sessions: list[dict[str, Any]] = Field(default_factory=list)
    minds: list[MindCreated] = Field(default_factory=list)
    identities: dict[str, str] = Field(default_factory=dict)
    keys: list[ApiKey] = Field(default_factory=list)
    providers: list[Provider] = Field(default_factory=list)


class ExportStarted(Answer):
    """`POST /me/exports`: the export being written (`status` "pending"); poll `get_export`."""

    export_id: str
    status: str


class ExportJob(Answer):
    """`GET /me/exports/{exportId}`: `status` is "pending", "ready" or "failed". Once ready, `url` is
    the file's download (presigned, good until `expires_at`, an hour from this answer: ask again for
    a new one), `bytes` its size and `records` its lines after the header."""

    status: str
    url: str | None = None
    bytes: int | None = None
    records: int | None = None
    expires_at: datetime | None = None

    def __repr__(self) -> str:  # the URL is a credential for an hour: out of reprs and logs
        return (
            f"ExportJob(status={self.status!r}, bytes={self.bytes!r}, records={self.records!r}, "
            f"expires_at={self.expires_at!r}, url={'…' if self.url else None})"
        )

    __str__ = __repr__


class Message(BaseModel):
    """One conversation message for ingest and summarize (a dict `{"role", "content"}` works too,
    with an optional `"created_at"`). `created_at` is when it was said (default: when the server
    receives it); relative dates in it ("yesterday", "เมื่อวาน") are read against that moment."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str
    created_at: datetime | str | None = None


# --- the change feed and webhooks ------------------------------------------------------------------


class MemoryChange(Answer):
    """One row of `GET /memory/changes`."""

    seq: int
    at: datetime
    memory_id: str
    change: str
    version: int


class MemoryChanges(Answer):
    """A page of `GET /memory/changes`: ask for `after=next_after` next."""

    changes: list[MemoryChange]
    next_after: int


class Webhook(Answer):
    """One of `GET /webhooks` (never its secret)."""

    webhook_id: str
    url: str
    events: list[str]
    mind_id: str | None = None
    created_at: datetime
    disabled_at: datetime | None = None


class WebhookCreated(Answer):
    """`POST /webhooks`: `secret` (whsec_...) verifies deliveries, shown this once."""

    webhook_id: str
    url: str
    events: list[str]
    mind_id: str | None = None
    secret: str
    created_at: datetime

    def __repr__(self) -> str:  # the secret stays out of reprs and logs
        return f"WebhookCreated(webhook_id={self.webhook_id!r}, url={self.url!r}, events={self.events!r})"

    __str__ = __repr__


class DeliveryAttempt(Answer):
    """One of `GET /webhooks/{id}/deliveries`."""

    event_id: str
    type: str
    attempt: int
    status_code: int | None = None
    error: str | None = None
    at: datetime
