"""GET /memory/recall — every live memory as plain text for an LLM's context."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends, Response
from aws_lambda_powertools.event_handler.openapi.params import Query

from synapse.core.models.base import Category, Scope, Tag
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.account import minds
from synapse.services.memory import memories

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.get(
    "/memory/recall",
    summary="Plain-text recall for an LLM context",
    tags=["recall"],
    responses=api.responses(
        "read",
        {200: {"description": "text/plain", "content": {"text/plain": {"schema": {"type": "string"}}}}},
    ),
)
def recall_text(
    who: Annotated[Principal, Depends(api.caller)],
    category: Category | None = None,
    tag: Annotated[Tag | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> Response[str]:
    matching = memories.by_priority(memories.live(who, category=category, tag=tag))
    text = memories.render_text(minds.name_of(who), matching, limit)
    return Response(status_code=200, content_type="text/plain; charset=utf-8", body=text)


handler = api.entrypoint(app, scope=Scope.read)
