"""POST /memory/{id}/verify — a human marks a memory verified (agents get 403)."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends

from synapse.core.models.memory import Memory
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.memory import memories

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.post(
    "/memory/<id>/verify",
    summary="Verify a memory (users only)",
    tags=["memories"],
    responses=api.responses("user", params=False, not_found="no memory with that id (or it has expired)"),
)
def verify(id: str, who: Annotated[Principal, Depends(api.caller)]) -> Memory:
    return memories.verify(who, id)


handler = api.entrypoint(app, user_only=True)
