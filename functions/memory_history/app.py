"""GET /memory/{id}/history — every kept version of a memory, the current one first."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends

from synapse.core.models.base import Scope
from synapse.core.models.memory import MemoryHistory
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.memory import memories

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.get(
    "/memory/<id>/history",
    summary="The versions of a memory, newest first",
    tags=["memories"],
    responses=api.responses("read", params=False, not_found="no memory with that id (or it has expired)"),
)
def history(id: str, who: Annotated[Principal, Depends(api.caller)]) -> MemoryHistory:
    return memories.history(who, id)


handler = api.entrypoint(app, scope=Scope.read)
