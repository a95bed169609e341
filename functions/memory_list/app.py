"""GET /memory — list memories, filtered, a page at a time."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends
from aws_lambda_powertools.event_handler.openapi.params import Query

from synapse.core.models.base import Category, Scope, Source, Tag
from synapse.core.models.memory import MemoryList
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.memory import memories

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.get("/memory", summary="List memories", tags=["memories"], responses=api.responses("read"))
def list_memories(
    who: Annotated[Principal, Depends(api.caller)],
    category: Category | None = None,
    tag: Annotated[Tag | None, Query()] = None,
    source: Source | None = None,
    verified: bool | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: Annotated[str | None, Query(max_length=1024)] = None,
) -> MemoryList:
    page, next_cursor = memories.list_page(
        who, category=category, tag=tag, source=source, verified=verified, limit=limit, cursor=cursor
    )
    return MemoryList(memories=page, next_cursor=next_cursor)


handler = api.entrypoint(app, scope=Scope.read)
