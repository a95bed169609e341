"""Conversations: ingest, recall, context, summaries, and the MCP messages (documentation)."""

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)

from synapse.core.models.base import (
    KEY_PATTERN,
    MAX_CONTENT,
    MAX_QUERY,
    MAX_TAGS,
    Body,
    Category,
    JsonInt,
    Model,
    NoNulText,
    Priority,
    QueryText,
    Rfc3339In,
    Role,
    SaidAt,
    SessionId,
    Tag,
    Tags,
    Text,
    Timestamp,
    TimezoneName,
    UserId,
)
from synapse.core.models.memory import Memory

# --- conversations ------------------------------------------------------------------------

MAX_MESSAGES = 50


class ChatMessage(Model):
    """One conversation message, as ingested or summarized."""

    role: Role
    content: Text
    # when it was said (RFC 3339; later than now + 5 minutes is refused); default: the request's arrival
    created_at: SaidAt | None = None


Messages = Annotated[list[ChatMessage], Field(min_length=1, max_length=MAX_MESSAGES)]


class IngestIn(Body):
    userId: UserId | None = None
    sessionId: SessionId
    messages: Messages
    # the timezone the messages' relative dates are read in, for this request (default: the mind's)
    timezone: TimezoneName | None = None


class ExtractedNugget(BaseModel):
    """A memory an extractor proposes; (category, key) is its identity within the mind."""

    model_config = ConfigDict(defer_build=True)  # built on first use: only ingest extracts

    category: Category
    key: str = Field(pattern=KEY_PATTERN)
    content: str = Field(min_length=1, max_length=MAX_CONTENT)
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS)
    priority: Priority = Priority.normal
    confidence: float = Field(default=0.7, ge=0.0, le=1.0)
    is_identity: bool = False
    # when what it says happens or became true (UTC); None: when its message was said
    valid_at: datetime | None = None


class ExistingKey(BaseModel):
    """A key the mind already has, shown to the extractor so that a changed fact reuses it."""

    model_config = ConfigDict(defer_build=True)

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


class TimeIn(Body):
    """What a read needs to know about time: when "now" is (a period a query names, like "last
    week", is resolved against it, in the timezone), and `as_of`, the moment the mind is read as of."""

    reference_time: Rfc3339In | None = Field(default=None, description="RFC 3339; default now")
    timezone: TimezoneName | None = Field(default=None, description="IANA; default the mind's")
    as_of: Rfc3339In | None = Field(default=None, description="the memories as they were at this moment")


class RecallIn(TimeIn):
    userId: UserId | None = None
    query: QueryText
    limit: JsonInt = Field(default=5, ge=1, le=50)
    category: Category | None = None
    tags: Tags | None = None


class SearchIn(Body):
    """The MCP `search` tool's input: GET /memory/search's parameters, with the same rules."""

    q: Annotated[NoNulText, Field(min_length=1, max_length=MAX_QUERY)]
    tag: Tag | None = None
    limit: JsonInt = Field(default=20, ge=1, le=100)


class ForgetIn(Body):
    """The MCP `forget` tool's input: the id of the memory to delete (DELETE /memory/{id})."""

    id: Annotated[str, Field(min_length=1, max_length=64)]


class RecalledMemory(Model):
    id: str
    text: str
    type: Category
    key: str
    score: float
    priority: Priority
    verified: bool
    created_at: Timestamp
    valid_at: Timestamp | None = None


class RecallOut(Model):
    memories: list[RecalledMemory]
    identity: str | None


class ContextIn(TimeIn):
    """POST /memory/context: what one chat turn's prompt needs, in one call."""

    userId: UserId | None = None
    sessionId: SessionId | None = None
    query: QueryText
    limit: JsonInt = Field(default=3, ge=1, le=20)
    recent: JsonInt = Field(default=5, ge=0, le=20)


class RecentMessage(Model):
    role: Role
    content: str
    created_at: Timestamp


class ContextOut(Model):
    identity: str | None
    memories: list[RecalledMemory]
    summary: str | None
    recent: list[RecentMessage]
    prompt: str


class SummarizeIn(Body):
    userId: UserId | None = None
    sessionId: SessionId
    messages: Annotated[list[ChatMessage], Field(min_length=1, max_length=MAX_MESSAGES)] | None = None
    timezone: TimezoneName | None = None


class SummaryOut(Model):
    summary: str
    chunk_id: str


class SummaryChunk(Model):
    chunk_id: str
    summary: str
    msg_count: int
    created_at: Timestamp


class SummaryList(Model):
    summaries: list[SummaryChunk]


# --- MCP (documentation and the first check of POST /mcp; the SDK reads the message itself) ------------


class McpMessage(Model):
    """A JSON-RPC 2.0 request or notification of the Model Context Protocol (`initialize`,
    `tools/list`, `tools/call`, `notifications/initialized`, ...)."""

    model_config = ConfigDict(extra="allow")

    jsonrpc: Literal["2.0"]
    method: Annotated[str, Field(min_length=1, max_length=200)]
    id: int | str | None = Field(default=None, description="Absent for a notification (answered 202)")
    params: dict[str, Any] | None = None


class McpAnswer(Model):
    """The JSON-RPC 2.0 response to a request: `result`, or `error` for a failure of the protocol.
    A tool that fails answers a `result` with `isError: true`."""

    model_config = ConfigDict(extra="allow")

    jsonrpc: Literal["2.0"]
    id: int | str | None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
