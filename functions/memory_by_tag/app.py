"""GET /memory/by-tag — memories with a tag (case-insensitive), priority first."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends
from aws_lambda_powertools.event_handler.openapi.params import Query

from synapse.core.models.base import Scope, Tag
from synapse.core.models.memory import MemoryList
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.memory import memories

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.get("/memory/by-tag", summary="Memories with a tag", tags=["memories"], responses=api.responses("read"))
def by_tag(
    who: Annotated[Principal, Depends(api.caller)],
    tag: Annotated[Tag, Query()],
    limit: Annotated[int | None, Query(ge=1, le=100)] = None,
    cursor: Annotated[str | None, Query(max_length=1024)] = None,
) -> MemoryList:
    # every memory with the tag unless the caller pages with `limit` (then `next_cursor` says more)
    page, next_cursor = memories.by_tag_page(who, tag, limit=limit, cursor=cursor)
    return MemoryList(memories=page, next_cursor=next_cursor)


handler = api.entrypoint(app, scope=Scope.read)
