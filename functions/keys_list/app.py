"""GET /keys — the user's API keys (hints only, never the plain key)."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends

from synapse.core.models.account import ApiKeyList
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.account import auth

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.get(
    "/keys",
    summary="List API keys (users only)",
    tags=["keys"],
    responses=api.responses("user", params=False),
)
def list_keys(who: Annotated[Principal, Depends(api.caller)]) -> ApiKeyList:
    return auth.list_api_keys(who.user_id)


handler = api.entrypoint(app, user_only=True)
