"""API keys, provider keys and the export of everything stored for a user."""

from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    Field,
    StringConstraints,
    field_validator,
)
from pydantic.json_schema import SkipJsonSchema

from synapse.core.models.base import DEFAULT_MIND, Body, MindId, Model, Scope, Timestamp, not_blank
from synapse.core.models.memory import Memory, MemoryVersion
from synapse.core.models.minds import MindOut


class KeyIn(Body):
    name: Annotated[str, StringConstraints(min_length=1, max_length=100), AfterValidator(not_blank)]
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


class ApiKeyList(Model):
    keys: list[ApiKeyInfo]


class ProviderIn(Body):
    # printable ASCII without spaces: providers.put enforces it (with its own message), this documents it
    api_key: Annotated[
        str,
        StringConstraints(min_length=10, max_length=512),
        Field(json_schema_extra={"pattern": r"^[\x21-\x7e]+$"}),
    ]


class ProviderInfo(Model):
    provider: str
    hint: str
    updated_at: Timestamp


class ProviderList(Model):
    providers: list[ProviderInfo]


class ExportOut(Model):
    """Everything stored for a user (vectors left out; keys and provider keys as hints only)."""

    memories: list[Memory]
    # each memory's kept versions before its current one, newest first (by memory id)
    history: dict[str, list[MemoryVersion]] = Field(default_factory=dict)
    identity: str | None
    # each with its `mind_id` and `session_id` (one session name may be used in several minds)
    summaries: list[dict[str, Any]]
    sessions: list[dict[str, Any]]
    # every mind but the default one, and each mind's identity line (the default's is `identity`)
    minds: list[MindOut] = Field(default_factory=list)
    identities: dict[str, str] = Field(default_factory=dict)
    keys: list[ApiKeyInfo] = Field(default_factory=list)
    providers: list[ProviderInfo] = Field(default_factory=list)


# --- exports of any size (POST /me/exports) -------------------------------------------------------


class ExportStatus(StrEnum):
    pending = "pending"
    ready = "ready"
    failed = "failed"


def _absent(value: Any) -> bool:
    return value is None


class ExportStarted(Model):
    export_id: str
    status: ExportStatus


class ExportJob(Model):
    """An export file's state; `url`, `bytes`, `records` and `expires_at` once it is ready (`url`
    signed for an hour from this answer, never past the file's deletion: `expires_at`)."""

    status: ExportStatus
    url: str | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent)
    bytes: int | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent)
    records: int | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent)
    expires_at: Timestamp | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent)
