"""Minds: a user's separate memory spaces (POST/GET/DELETE /minds)."""

from typing import Annotated

from pydantic import (
    AfterValidator,
    StringConstraints,
)

from synapse.core.models.base import Body, Model, Timestamp, not_blank

# --- minds ----------------------------------------------------------------------------------------


class MindIn(Body):
    name: Annotated[str, StringConstraints(min_length=1, max_length=100), AfterValidator(not_blank)]
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
