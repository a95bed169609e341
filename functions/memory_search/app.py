"""GET /memory/search — ranked full-text search (BM25, Thai-aware), optionally within a tag."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends
from aws_lambda_powertools.event_handler.openapi.params import Query

from synapse.core.models.base import MAX_QUERY, NO_NUL_PATTERN, NoNulText, Scope, Tag
from synapse.core.models.memory import ScoredMemories
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.memory import memories

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.get("/memory/search", summary="Full-text search", tags=["memories"], responses=api.responses("read"))
def search(
    who: Annotated[Principal, Depends(api.caller)],
    q: Annotated[
        NoNulText, Query(min_length=1, max_length=MAX_QUERY, json_schema_extra={"pattern": NO_NUL_PATTERN})
    ],
    tag: Annotated[Tag | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> ScoredMemories:
    return ScoredMemories(memories=memories.search(who, q, tag=tag, limit=limit))


handler = api.entrypoint(app, scope=Scope.read)
