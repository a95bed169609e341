"""GET /memory/timeline — the mind's memories in the order of their time, a page at a time."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from synapse.core.models.base import DayOrMoment, Scope
from synapse.core.models.memory import MemoryList
from synapse.http.caller import InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.get(
    "/memory/timeline",
    summary="The memories in time order",
    description=(
        "Live memories whose time — `valid_at`, else `created_at` — is in `[from, to)`, oldest first, "
        "paged like `GET /memory` (`next_cursor`). `from` and `to` are RFC 3339 timestamps or dates "
        "`YYYY-MM-DD` (00:00 of that day in the mind's timezone); either may be left out. Expired "
        "memories are left out, as everywhere."
    ),
    tags=["memories"],
    responses=responses("read"),
)
def timeline(
    mind: InMind,
    start: Annotated[DayOrMoment | None, Query(alias="from")] = None,
    end: Annotated[DayOrMoment | None, Query(alias="to")] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: Annotated[str | None, Query(max_length=1024)] = None,
) -> MemoryList:
    page, next_cursor = memories.timeline(mind, start=start, end=end, limit=limit, cursor=cursor)
    return MemoryList(memories=page, next_cursor=next_cursor)


handler = entrypoint(app, scope=Scope.read)
