"""Typed models: the memory object, its enums, and request/response bodies.

No `from __future__ import annotations` here: pydantic would compile and eval every field's string
annotation when each class is created, about a fifth of this module's import time (a cold-start cost).
"""

import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    StringConstraints,
    field_validator,
)


class Category(StrEnum):
    identity = "identity"
    preference = "preference"
    fact = "fact"
    project = "project"
    skill = "skill"
    mistake = "mistake"
    context = "context"
    note = "note"


class Priority(StrEnum):
    low = "low"
    normal = "normal"
    high = "high"
    critical = "critical"


PRIORITY_RANK = {Priority.low: 0, Priority.normal: 1, Priority.high: 2, Priority.critical: 3}


class Source(StrEnum):
    user = "user"
    agent = "agent"


class Role(StrEnum):
    user = "user"
    assistant = "assistant"
    system = "system"
    tool = "tool"


# --- shared field types -------------------------------------------------------------------


USER_ID_RE = re.compile(r"^[A-Za-z0-9._@-]{1,128}$")
SESSION_ID_PATTERN = r"^[A-Za-z0-9._-]{1,128}$"
SESSION_ID_RE = re.compile(SESSION_ID_PATTERN)
KEY_PATTERN = r"^[a-z0-9][a-z0-9_]{0,99}$"
MIND_ID_PATTERN = r"^(default|m_[a-z0-9]{12})$"
DEFAULT_MIND = "default"
MAX_CONTENT = 8000
MAX_TAGS = 20
MAX_TAG_LEN = 50


def utcnow() -> datetime:
    """Now, UTC, to the second (the API's timestamps carry no fractions)."""
    return datetime.now(UTC).replace(microsecond=0)


def _as_utc(value: datetime) -> datetime:
    # A naive timestamp is taken as UTC; everything is stored and shown in UTC.
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:  # e.g. 0001-01-01T00:00:00+05:00: before year 1 in UTC
        raise ValueError("the timestamp is out of range") from exc


def iso(value: datetime) -> str:
    # isoformat pads the year to 4 digits (strftime's %Y does not on Linux: "133-05-21...")
    return _as_utc(value).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def parse_iso(value: str) -> datetime:
    return _as_utc(datetime.fromisoformat(value.replace("Z", "+00:00")))


Timestamp = Annotated[datetime, AfterValidator(_as_utc), PlainSerializer(iso, return_type=str)]
UserId = Annotated[str, StringConstraints(pattern=USER_ID_RE.pattern)]
SessionId = Annotated[str, StringConstraints(pattern=SESSION_ID_PATTERN)]
MemoryKey = Annotated[str, StringConstraints(pattern=KEY_PATTERN)]
Content = Annotated[str, StringConstraints(min_length=1, max_length=MAX_CONTENT)]


def normalize_tags(tags: list[str]) -> list[str]:
    """Lower-case, trim, drop empties and duplicates, keep first-seen order."""
    seen: dict[str, None] = {}
    for tag in tags:
        clean = tag.strip().lower()
        if clean:
            seen.setdefault(clean, None)
    return list(seen)


def _check_tags(tags: list[str]) -> list[str]:
    if len(tags) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags are allowed")
    for tag in tags:
        if len(tag.strip()) > MAX_TAG_LEN:
            raise ValueError(f"a tag is at most {MAX_TAG_LEN} characters")
    return normalize_tags(tags)


Tags = Annotated[list[str], AfterValidator(_check_tags)]


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


class Model(BaseModel):
    """Every model here: validators are built on first use, not at import. A function uses a few of
    these models, and building all of them is a cold-start cost every function would pay."""

    model_config = ConfigDict(defer_build=True)


class Body(Model):
    """Request bodies: unknown fields are ignored (never trusted), strings kept as sent."""

    model_config = ConfigDict(extra="ignore")


# --- the memory object --------------------------------------------------------------------


class Memory(Model):
    id: str
    category: Category
    key: str
    content: str
    tags: list[str] = Field(default_factory=list)
    priority: Priority = Priority.normal
    source: Source
    verified: bool
    confidence: float
    expires_at: Timestamp | None = None
    user_id: str
    session_id: str | None = None
    created_at: Timestamp
    updated_at: Timestamp
    version: int = 1
    mind_id: str = "default"

    def is_live(self, now: datetime) -> bool:
        return self.expires_at is None or self.expires_at > now


class ScoredMemory(Memory):
    score: float


class Change(StrEnum):
    """What made a version of a memory."""

    created = "created"
    updated = "updated"
    verified = "verified"
    restored = "restored"


class MemoryVersion(Model):
    """One kept version of a memory (GET /memory/{id}/history)."""

    version: int
    content: str
    tags: list[str] = Field(default_factory=list)
    priority: Priority
    source: Source
    verified: bool
    confidence: float
    expires_at: Timestamp | None = None
    updated_at: Timestamp
    change: Change


class MemoryHistory(Model):
    versions: list[MemoryVersion]


class RestoreIn(Body):
    version: int = Field(ge=1, strict=True)


class MemoryIn(Body):
    """POST /memory: create, or update the memory with the same (category, key)."""

    userId: UserId | None = None
    category: Category
    key: MemoryKey
    content: Annotated[Content, AfterValidator(_not_blank)]
    tags: Tags = Field(default_factory=list)
    priority: Priority = Priority.normal
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    expires_at: Timestamp | None = None


class MemoryPatch(Body):
    """PUT /memory/{id}: category and key are part of the id and cannot change."""

    userId: UserId | None = None
    content: Annotated[Content, AfterValidator(_not_blank)] | None = None
    tags: Tags | None = None
    priority: Priority | None = None
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    expires_at: Timestamp | None = None
    category: Category | None = None
    key: MemoryKey | None = None


class MemoryList(Model):
    memories: list[Memory]
    next_cursor: str | None = None


class Memories(Model):
    memories: list[Memory]


class ScoredMemories(Model):
    memories: list[ScoredMemory]


# --- keys ---------------------------------------------------------------------------------


class Scope(StrEnum):
    read = "memory:read"
    write = "memory:write"


MindId = Annotated[str, StringConstraints(pattern=MIND_ID_PATTERN)]


class KeyIn(Body):
    name: Annotated[str, StringConstraints(min_length=1, max_length=100), AfterValidator(_not_blank)]
    mind_id: MindId = DEFAULT_MIND  # a Mind Key acts in this mind only
    # a bound on the list as sent; repeats are merged below (two distinct scopes exist)
    scopes: list[Scope] = Field(min_length=1, max_length=10)

    @field_validator("scopes")
    @classmethod
    def _unique(cls, scopes: list[Scope]) -> list[Scope]:
        return sorted(set(scopes))


class ApiKeyInfo(Model):
    key_id: str
    name: str
    scopes: list[Scope]
    hint: str
    created_at: Timestamp
    mind_id: str = DEFAULT_MIND


class ApiKeyCreated(Model):
    key_id: str
    key: str
    name: str
    scopes: list[Scope]
    created_at: Timestamp
    mind_id: str = DEFAULT_MIND


# --- minds ----------------------------------------------------------------------------------------


class MindIn(Body):
    name: Annotated[str, StringConstraints(min_length=1, max_length=100), AfterValidator(_not_blank)]
    description: Annotated[str, StringConstraints(max_length=1000)] | None = None


class MindOut(Model):
    mind_id: str
    name: str
    description: str | None
    created_at: Timestamp


class MindInfo(MindOut):
    memories: int


class MindList(Model):
    minds: list[MindInfo]


class ApiKeyList(Model):
    keys: list[ApiKeyInfo]


class Health(Model):
    status: str = "ok"


# --- conversations ------------------------------------------------------------------------

MAX_MESSAGES = 50


class ChatMessage(Model):
    """One conversation message, as ingested or summarized."""

    role: Role
    content: Annotated[str, StringConstraints(min_length=1, max_length=MAX_CONTENT)]


Messages = Annotated[list[ChatMessage], Field(min_length=1, max_length=MAX_MESSAGES)]


class IngestIn(Body):
    userId: UserId | None = None
    sessionId: SessionId
    messages: Messages


class ExtractedNugget(BaseModel):
    """A memory an extractor proposes; (category, key) is its identity within the mind."""

    category: Category
    key: str = Field(pattern=KEY_PATTERN)
    content: str = Field(min_length=1, max_length=MAX_CONTENT)
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS)
    priority: Priority = Priority.normal
    confidence: float = Field(default=0.7, ge=0.0, le=1.0)
    is_identity: bool = False


class ExistingKey(BaseModel):
    """A key the mind already has, shown to the extractor so that a changed fact reuses it."""

    category: Category
    key: str
    content: str


class IngestOut(Model):
    nuggets_created: int
    nuggets_updated: int
    skipped_transient: int
    identity_updated: bool
    nuggets: list[Memory]
    # memories this ingest changed whose last version a user wrote (kept in their history)
    overwrote_user: list[str] = Field(default_factory=list)


class RecallIn(Body):
    userId: UserId | None = None
    query: Annotated[str, StringConstraints(min_length=1, max_length=2000), AfterValidator(_not_blank)]
    limit: int = Field(default=5, ge=1, le=50)
    category: Category | None = None
    tags: Annotated[list[str], AfterValidator(_check_tags)] | None = None


class RecalledMemory(Model):
    id: str
    text: str
    type: Category
    key: str
    score: float
    priority: Priority
    verified: bool
    created_at: Timestamp


class RecallOut(Model):
    memories: list[RecalledMemory]
    identity: str | None


class SummarizeIn(Body):
    userId: UserId | None = None
    sessionId: SessionId
    messages: Annotated[list[ChatMessage], Field(min_length=1, max_length=MAX_MESSAGES)] | None = None


class SummaryOut(Model):
    summary: str
    chunk_id: str


class IdentityOut(Model):
    userId: str
    identity: str | None


class SummaryChunk(Model):
    chunk_id: str
    summary: str
    msg_count: int
    created_at: Timestamp


class SummaryList(Model):
    summaries: list[SummaryChunk]


# --- providers and privacy ----------------------------------------------------------------


class ProviderIn(Body):
    api_key: Annotated[str, StringConstraints(min_length=10, max_length=512)]


class ProviderInfo(Model):
    provider: str
    hint: str
    updated_at: Timestamp


class ProviderList(Model):
    providers: list[ProviderInfo]


class Deleted(Model):
    deleted: int


class ExportOut(Model):
    """Everything stored for a user (vectors left out; keys and provider keys as hints only)."""

    memories: list[Memory]
    # each memory's kept versions before its current one, newest first (by memory id)
    history: dict[str, list[MemoryVersion]] = Field(default_factory=dict)
    identity: str | None
    summaries: list[dict[str, Any]]
    sessions: list[dict[str, Any]]
    keys: list[ApiKeyInfo] = Field(default_factory=list)
    providers: list[ProviderInfo] = Field(default_factory=list)
