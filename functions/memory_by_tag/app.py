"""GET /memory/by-tag — memories with a tag (case-insensitive), priority first."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from synapse.core.models.base import Scope, Tag
from synapse.core.models.memory import MemoryList
from synapse.http.caller import InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.get("/memory/by-tag", summary="Memories with a tag", tags=["memories"], responses=responses("read"))
def by_tag(
    mind: InMind,
    tag: Annotated[Tag, Query()],
    limit: Annotated[int | None, Query(ge=1, le=100)] = None,
    cursor: Annotated[str | None, Query(max_length=1024)] = None,
) -> MemoryList:
    # every memory with the tag unless the caller pages with `limit` (then `next_cursor` says more)
    page, next_cursor = memories.by_tag_page(mind, tag, limit=limit, cursor=cursor)
    return MemoryList(memories=page, next_cursor=next_cursor)


handler = entrypoint(app, scope=Scope.read)
