"""GET /memory/search — ranked full-text search (BM25, Thai-aware), optionally within a tag."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends
from aws_lambda_powertools.event_handler.openapi.params import Query

from synapse import api, memories
from synapse.models import Scope, ScoredMemories
from synapse.principal import Principal

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.get("/memory/search", summary="Full-text search", tags=["memories"])
def search(
    who: Annotated[Principal, Depends(api.caller)],
    q: Annotated[str, Query(min_length=1, max_length=2000)],
    tag: Annotated[str | None, Query(max_length=50)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> ScoredMemories:
    return ScoredMemories(memories=memories.search(who, q, tag=tag, limit=limit))


handler = api.entrypoint(app, scope=Scope.read)
