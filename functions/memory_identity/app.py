"""GET /memory/identity/{userId} — the user's identity line."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends
from aws_lambda_powertools.event_handler.openapi.params import Path

from synapse import api
from synapse.auth import Principal
from synapse.identity import current as current_identity
from synapse.models import IdentityOut, Scope, UserIdPath

app = APIGatewayHttpResolver(enable_validation=True, serializer=api.to_json)
api.setup(app)


@app.get(
    "/memory/identity/<userId>",
    summary="The identity line",
    tags=["conversation"],
    responses=api.responses("read"),
)
def identity(
    userId: Annotated[UserIdPath, Path()],
    who: Annotated[Principal, Depends(api.caller)],
) -> IdentityOut:
    user_id = who.check_user_id(userId)
    return IdentityOut(userId=user_id, identity=current_identity(user_id))


handler = api.entrypoint(app, scope=Scope.read)
