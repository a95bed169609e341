"""DELETE /providers/{provider} — forget the user's provider key (users only)."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends, Response

from synapse import api, providers
from synapse.principal import Principal

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.delete(
    "/providers/<provider>",
    summary="Forget a provider key (users only)",
    tags=["providers"],
    responses={204: {"description": "Forgotten"}},
)
def delete_provider(provider: str, who: Annotated[Principal, Depends(api.caller)]) -> Response[None]:
    providers.delete(who.user_id, provider)
    return Response(status_code=204)


handler = api.entrypoint(app, user_only=True)
