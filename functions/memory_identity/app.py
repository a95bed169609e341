"""GET /memory/identity/{userId} — the user's identity line."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends
from aws_lambda_powertools.event_handler.openapi.params import Path

from synapse.core.models.base import Scope, UserIdPath
from synapse.core.models.memory import IdentityOut
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.memory import identity

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.get(
    "/memory/identity/<userId>",
    summary="The identity line",
    tags=["conversation"],
    responses=api.responses("read"),
)
def identity_route(
    userId: Annotated[UserIdPath, Path()],
    who: Annotated[Principal, Depends(api.caller)],
) -> IdentityOut:
    return identity.identity_of(who, userId)


handler = api.entrypoint(app, scope=Scope.read)
