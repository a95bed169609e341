"""PUT /memory/{id} — change a memory's content, tags, priority, confidence or expiry."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends

from synapse.core.models.base import Scope
from synapse.core.models.memory import Memory, MemoryPatch
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.memory import memories

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.put(
    "/memory/<id>",
    summary="Update a memory",
    tags=["memories"],
    responses=api.responses("write", body=True, not_found="no memory with that id"),
)
def update(id: str, body: MemoryPatch, who: Annotated[Principal, Depends(api.caller)]) -> Memory:
    return memories.update(who, id, body)


handler = api.entrypoint(app, scope=Scope.write)
