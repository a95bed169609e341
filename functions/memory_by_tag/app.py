"""GET /memory/by-tag — memories with a tag (case-insensitive)."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends
from aws_lambda_powertools.event_handler.openapi.params import Query

from synapse import api, memories
from synapse.auth import Principal
from synapse.models import Memories, Scope

app = APIGatewayHttpResolver(enable_validation=True, serializer=api.to_json)
api.setup(app)


@app.get("/memory/by-tag", summary="Memories with a tag", tags=["memories"])
def by_tag(
    who: Annotated[Principal, Depends(api.caller)],
    tag: Annotated[str, Query(min_length=1, max_length=50)],
    limit: Annotated[int, Query(ge=1, le=100)] = 100,
) -> Memories:
    return Memories(memories=memories.by_priority(memories.live(who, tag=tag))[:limit])


handler = api.entrypoint(app, scope=Scope.read)
