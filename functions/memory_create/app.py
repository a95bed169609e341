"""POST /memory — create a memory, or update the one with the same (category, key)."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends, Response

from synapse.core.models.base import Scope
from synapse.core.models.memory import Memory, MemoryIn
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.memory import memories

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.post(
    "/memory",
    summary="Create or update a memory by (category, key)",
    tags=["memories"],
    responses=api.responses("write", {201: "Created", 200: "Updated (same category and key)"}, body=True),
)
def create(body: MemoryIn, who: Annotated[Principal, Depends(api.caller)]) -> Response[Memory]:
    memory, created = memories.put(who, body)
    return Response(status_code=201 if created else 200, content_type=api.JSON, body=memory)


handler = api.entrypoint(app, scope=Scope.write)
