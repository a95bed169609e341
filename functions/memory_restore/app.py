"""POST /memory/{id}/restore — an older version's content, tags, priority, confidence and expiry, as a
new version (nothing is lost: the version it replaces is kept too)."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends

from synapse.core.models.base import Scope
from synapse.core.models.memory import Memory, RestoreIn
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.memory import memories

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.post(
    "/memory/<id>/restore",
    summary="Restore a version of a memory",
    tags=["memories"],
    responses=api.responses("write", body=True, not_found="no memory with that id, or no such version of it"),
)
def restore(id: str, body: RestoreIn, who: Annotated[Principal, Depends(api.caller)]) -> Memory:
    return memories.restore(who, id, body)


handler = api.entrypoint(app, scope=Scope.write)
