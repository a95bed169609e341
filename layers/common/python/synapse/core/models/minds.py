"""Minds: a user's separate memory spaces (POST/GET/DELETE /minds)."""

from typing import Annotated

from pydantic import (
    AfterValidator,
    StrictBool,
    StringConstraints,
)

from synapse.core.models.base import DEFAULT_TIMEZONE, Body, Model, Timestamp, TimezoneName, not_blank

# --- minds ----------------------------------------------------------------------------------------


class MindIn(Body):
    name: Annotated[str, StringConstraints(min_length=1, max_length=100), AfterValidator(not_blank)]
    description: Annotated[str, StringConstraints(max_length=1000)] | None = None
    timezone: TimezoneName | None = None
    review_agent_changes: StrictBool | None = None


MindName = Annotated[str, StringConstraints(min_length=1, max_length=100), AfterValidator(not_blank)]
Description = Annotated[str, StringConstraints(max_length=1000)]


class MindPatch(Body):
    """PATCH /minds/{mindId}: any of the mind's settings (the default mind's name is the userId)."""

    name: MindName | None = None
    description: Description | None = None
    timezone: TimezoneName | None = None
    # a JSON boolean ("no", 0 are refused, not read as false)
    review_agent_changes: StrictBool | None = None


class MindOut(Model):
    mind_id: str
    name: str
    description: str | None
    created_at: Timestamp
    timezone: str = DEFAULT_TIMEZONE
    review_agent_changes: bool = True


class MindQuota(Model):
    memories: int  # MAX_MEMORIES_PER_MIND


class MindInfo(MindOut):
    memories: int
    quota: MindQuota  # the limits of the mind, beside its usage (`memories`)


class MindList(Model):
    minds: list[MindInfo]
