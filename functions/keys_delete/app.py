"""DELETE /keys/{keyId} — revoke an API key (users only)."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends, Response

from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.account import auth

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.delete(
    "/keys/<keyId>",
    summary="Revoke an API key (users only)",
    tags=["keys"],
    responses=api.responses(
        "user", {204: api.no_content("Revoked")}, params=False, not_found="no API key with that id"
    ),
)
def delete_key(keyId: str, who: Annotated[Principal, Depends(api.caller)]) -> Response[None]:
    auth.revoke_api_key(who.user_id, keyId)
    return Response(status_code=204)


handler = api.entrypoint(app, user_only=True)
