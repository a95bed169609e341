"""The change feed: `GET /memory/changes` (a mind's memory changes, oldest first, by change-log seq)."""

from pydantic import Field

from synapse.core.models.base import Model, Timestamp


class MemoryChange(Model):
    seq: int = Field(
        description="The change-log position of the write; one write may change several memories"
    )
    at: Timestamp = Field(description="When the write committed")
    memory_id: str
    change: str = Field(
        description=(
            "The history's word (created, updated, verified, restored, accepted, superseded, "
            "consolidated), or deleted"
        ),
        examples=["created"],
    )
    version: int = Field(description="The version the change made (a deletion: the version deleted)")


class MemoryChanges(Model):
    changes: list[MemoryChange]
    next_after: int = Field(description="The position to ask for next (`after=`): the last seq read")
