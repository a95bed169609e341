"""GET /memory/recall — every live memory as plain text for an LLM's context."""

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query

from synapse.core.models.base import Category, Scope, Tag
from synapse.http.caller import InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.get(
    "/memory/recall",
    summary="Plain-text recall for an LLM context",
    tags=["recall"],
    responses=responses(
        "read",
        {200: {"description": "text/plain", "content": {"text/plain": {"schema": {"type": "string"}}}}},
    ),
)
def recall_text(
    mind: InMind,
    category: Category | None = None,
    tag: Annotated[Tag | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> Response[str]:
    matching = memories.by_priority(memories.live(mind, category=category, tag=tag))
    text = memories.render_text(mind.name, matching, limit)
    return Response(status_code=200, content_type="text/plain; charset=utf-8", body=text)


handler = entrypoint(app, scope=Scope.read)
