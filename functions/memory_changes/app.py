"""GET /memory/changes — the mind's memory changes after a change-log position, oldest first."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from synapse.core.models.base import Scope
from synapse.core.models.changes import MemoryChanges
from synapse.http.caller import InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import changes

app = resolver()


@app.get(
    "/memory/changes",
    summary="The mind's memory changes after a position (the pull feed)",
    tags=["memories"],
    responses=responses(
        "read",
        gone="`after` is older than what the change log keeps (7 days), or not a position of this mind",
    ),
)
def memory_changes(
    mind: InMind,
    after: Annotated[int, Query(ge=0, description="The last seq already seen (0: from the oldest kept)")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000, description="Rows at most (one write is never split)")] = 100,
) -> MemoryChanges:
    return changes.feed(mind, after, limit)


handler = entrypoint(app, scope=Scope.read)
