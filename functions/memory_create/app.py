"""POST /memory — create a memory, or update the one with the same (category, key)."""

from aws_lambda_powertools.event_handler import Response

from synapse.core.models.base import Scope
from synapse.core.models.memory import Memory, MemoryIn
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.envelope import JSON
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.post(
    "/memory",
    summary="Create or update a memory by (category, key)",
    tags=["memories"],
    responses=responses("write", {201: "Created", 200: "Updated (same category and key)"}, body=True),
)
def create(body: MemoryIn, who: Caller, mind: InMind) -> Response[Memory]:
    memory, created = memories.put(who, mind, body)
    return Response(status_code=201 if created else 200, content_type=JSON, body=memory)


handler = entrypoint(app, scope=Scope.write)
