"""Many memories at once: `POST /memory/batch` and `POST /memory/import`."""

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints
from pydantic.json_schema import SkipJsonSchema

from synapse.core.models.base import (
    Body,
    Category,
    Confidence,
    Content,
    ErrorEnvelope,
    JsonInt,
    MemoryKey,
    Model,
    Priority,
    Tags,
    TimestampIn,
)
from synapse.core.models.memory import Memory, MemoryVersion

MAX_BATCH = 100
MAX_IMPORT = 500


class BatchIn(Body):
    """POST /memory/batch: each item a `POST /memory` body, validated on its own (an invalid item is
    answered 422 in its place; the others are written)."""

    memories: list[Any] = Field(
        min_length=1,
        max_length=MAX_BATCH,
        description="1-100 `POST /memory` bodies (each validated as that route validates its body)",
    )


def _absent(value: Any) -> bool:
    return value is None


class BatchItem(Model):
    """One item's answer: the status and body `POST /memory` would answer that item alone (`memory`
    for 201/200, `proposal` for 202, `error` — the envelope — for 409/422; absent otherwise)."""

    status: int = Field(description="201 created, 200 updated, 202 proposed, 409 conflict/quota, 422 invalid")
    memory: Memory | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent)
    proposal: dict[str, Any] | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent)
    error: ErrorEnvelope | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent)


class BatchOut(Model):
    results: list[BatchItem]


class ImportIn(Body):
    """POST /memory/import: records of a Synapse export (its `memory` records, each with its
    `history`) or mem0 memory objects (`get_all`'s `results`)."""

    format: Literal["synapse", "mem0"]
    records: list[Any] = Field(min_length=1, max_length=MAX_IMPORT)


class ImportFailure(Model):
    index: int
    error: ErrorEnvelope


class ImportOut(Model):
    imported: int = Field(description="memories created")
    updated: int = Field(description="memories that existed under the same (category, key), changed")
    skipped: int = Field(
        description="records already stored exactly as given, and synapse records that are not memories"
    )
    errors: list[ImportFailure]
    proposed: int | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_absent,
        description="(an agent's import) records that would change a memory a person verified: held as "
        "proposals for that person's yes (GET /memory/proposals); absent when none",
    )


# --- the records an import reads (validated one by one: a bad record is an error in its place) -----


class SynapseRecord(Body):
    """A memory record of a Synapse export (`GET /me/export`'s memories, or a JSON Lines export's
    `memory` lines): the fields an import keeps as given, and its history (newest first)."""

    type: str | None = None
    category: Category
    key: MemoryKey
    content: Content
    tags: Tags = Field(default_factory=list)
    priority: Priority = Priority.normal
    confidence: Confidence | None = None
    expires_at: TimestampIn | None = None
    valid_at: TimestampIn | None = None
    created_at: TimestampIn | None = None
    updated_at: TimestampIn | None = None
    version: JsonInt | None = Field(default=None, ge=1)
    history: list[MemoryVersion] = Field(default_factory=list, max_length=50)


class Mem0Record(Body):
    """A mem0 memory object (`get_all`'s `results`, `get`'s answer): what an import reads of it."""

    id: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    memory: Content
    categories: list[Annotated[str, StringConstraints(max_length=100)]] | None = Field(
        default=None, max_length=50
    )
    metadata: dict[str, Any] | None = None
    created_at: TimestampIn | None = None
    updated_at: TimestampIn | None = None
