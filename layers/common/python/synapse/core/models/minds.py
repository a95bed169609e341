"""Minds: a user's separate memory spaces (POST/GET/DELETE /minds)."""

from typing import Annotated

from pydantic import (
    AfterValidator,
    StringConstraints,
)

from synapse.core.models.base import DEFAULT_TIMEZONE, Body, Model, Timestamp, TimezoneName, not_blank

# --- minds ----------------------------------------------------------------------------------------


class MindIn(Body):
    name: Annotated[str, StringConstraints(min_length=1, max_length=100), AfterValidator(not_blank)]
    description: Annotated[str, StringConstraints(max_length=1000)] | None = None
    timezone: TimezoneName | None = None
    review_agent_changes: bool | None = None


MindName = Annotated[str, StringConstraints(min_length=1, max_length=100), AfterValidator(not_blank)]
Description = Annotated[str, StringConstraints(max_length=1000)]


class MindPatch(Body):
    """PATCH /minds/{mindId}: any of the mind's settings (the default mind's name is the userId)."""

    name: MindName | None = None
    description: Description | None = None
    timezone: TimezoneName | None = None
    review_agent_changes: bool | None = None


class MindOut(Model):
    mind_id: str
    name: str
    description: str | None
    created_at: Timestamp
    timezone: str = DEFAULT_TIMEZONE
    review_agent_changes: bool = True


class MindInfo(MindOut):
    memories: int


class MindList(Model):
    minds: list[MindInfo]
