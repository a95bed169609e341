"""The memory object, its versions, and the bodies of the memory routes."""

from datetime import datetime

from pydantic import (
    Field,
)

from synapse.core.models.base import (
    Body,
    Category,
    Change,
    Confidence,
    Content,
    DayOrMoment,
    JsonInt,
    MemoryKey,
    Model,
    Priority,
    Source,
    Tags,
    Timestamp,
    TimestampIn,
    UserId,
)

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
    # when what it says happens or became true (an appointment's day, a move); None: not known
    valid_at: Timestamp | None = None

    @property
    def when(self) -> datetime:
        """The moment a memory is about: `valid_at`, else when it was stored."""
        return self.valid_at or self.created_at

    def is_live(self, now: datetime) -> bool:
        return self.expires_at is None or self.expires_at > now


class ScoredMemory(Memory):
    score: float


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
    valid_at: Timestamp | None = None


class MemoryHistory(Model):
    versions: list[MemoryVersion]


class RestoreIn(Body):
    version: JsonInt = Field(ge=1)


class MemoryIn(Body):
    """POST /memory: create, or update the memory with the same (category, key)."""

    userId: UserId | None = None
    category: Category
    key: MemoryKey
    content: Content
    tags: Tags = Field(default_factory=list)
    priority: Priority = Priority.normal
    confidence: Confidence | None = None
    expires_at: TimestampIn | None = None
    valid_at: DayOrMoment | None = None


class MemoryPatch(Body):
    """PUT /memory/{id}: category and key are part of the id and cannot change."""

    userId: UserId | None = None
    content: Content | None = None
    tags: Tags | None = None
    priority: Priority | None = None
    confidence: Confidence | None = None
    expires_at: TimestampIn | None = None
    valid_at: DayOrMoment | None = None
    category: Category | None = None
    key: MemoryKey | None = None


class MemoryList(Model):
    memories: list[Memory]
    next_cursor: str | None = None


class Memories(Model):
    memories: list[Memory]


class ScoredMemories(Model):
    memories: list[ScoredMemory]


class IdentityOut(Model):
    userId: str
    identity: str | None
