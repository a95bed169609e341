"""GET /memory/{id} — one memory; `?as_of=` (RFC 3339): as it was then."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from synapse.core.models.base import Rfc3339In, Scope
from synapse.core.models.memory import Memory
from synapse.http.caller import InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.get(
    "/memory/<id>",
    summary="Get a memory",
    tags=["memories"],
    responses=responses(
        "read", params=True, not_found="no memory with that id (or it has expired), or none at `as_of`"
    ),
)
def get(id: str, mind: InMind, as_of: Annotated[Rfc3339In | None, Query()] = None) -> Memory:
    return memories.get(mind, id, as_of)


handler = entrypoint(app, scope=Scope.read)
