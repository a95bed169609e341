"""DELETE /memory/{id} — delete a memory."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends, Response

from synapse.core.models.base import Scope
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.memory import memories

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.delete(
    "/memory/<id>",
    summary="Delete a memory",
    tags=["memories"],
    responses=api.responses(
        "write", {204: api.no_content("Deleted")}, params=False, not_found="no memory with that id"
    ),
)
def delete(id: str, who: Annotated[Principal, Depends(api.caller)]) -> Response[None]:
    memories.delete(who, id)
    return Response(status_code=204)


handler = api.entrypoint(app, scope=Scope.write)
