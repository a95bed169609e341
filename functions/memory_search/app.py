"""GET /memory/search — ranked full-text search (BM25, Thai-aware), optionally within a tag."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from synapse.core.models.base import MAX_QUERY, NO_NUL_PATTERN, NoNulText, Scope, Tag
from synapse.core.models.memory import ScoredMemories
from synapse.http.caller import InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.get("/memory/search", summary="Full-text search", tags=["memories"], responses=responses("read"))
def search(
    mind: InMind,
    q: Annotated[
        NoNulText, Query(min_length=1, max_length=MAX_QUERY, json_schema_extra={"pattern": NO_NUL_PATTERN})
    ],
    tag: Annotated[Tag | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> ScoredMemories:
    return ScoredMemories(memories=memories.search(mind, q, tag=tag, limit=limit))


handler = entrypoint(app, scope=Scope.read)
