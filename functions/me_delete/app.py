"""DELETE /me — delete everything stored for the user (users only)."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends

from synapse.core.models.base import Deleted
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.account import privacy

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.delete(
    "/me",
    summary="Delete everything (users only)",
    tags=["privacy"],
    responses=api.responses("user", params=False),
)
def delete_me(who: Annotated[Principal, Depends(api.caller)]) -> Deleted:
    return Deleted(deleted=privacy.delete(who.user_id))


handler = api.entrypoint(app, user_only=True)
