"""GET /memory — list memories, filtered, a page at a time."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from synapse.core.models.base import Category, Scope, Source, Tag
from synapse.core.models.memory import MemoryList
from synapse.http.caller import InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.get("/memory", summary="List memories", tags=["memories"], responses=responses("read"))
def list_memories(
    mind: InMind,
    category: Category | None = None,
    tag: Annotated[Tag | None, Query()] = None,
    source: Source | None = None,
    verified: bool | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: Annotated[str | None, Query(max_length=1024)] = None,
) -> MemoryList:
    page, next_cursor = memories.list_page(
        mind, category=category, tag=tag, source=source, verified=verified, limit=limit, cursor=cursor
    )
    return MemoryList(memories=page, next_cursor=next_cursor)


handler = entrypoint(app, scope=Scope.read)
