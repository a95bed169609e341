"""DELETE /providers/{provider} — forget the user's provider key (users only)."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends, Response
from aws_lambda_powertools.event_handler.openapi.params import Path

from synapse.core.models.base import Provider
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.account import providers

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.delete(
    "/providers/<provider>",
    summary="Forget a provider key (users only)",
    tags=["providers"],
    responses=api.responses(
        "user", {204: api.no_content("Forgotten")}, not_found="no key is stored for that provider"
    ),
)
def delete_provider(
    provider: Annotated[Provider, Path()], who: Annotated[Principal, Depends(api.caller)]
) -> Response[None]:
    providers.delete(who.user_id, provider.value)
    return Response(status_code=204)


handler = api.entrypoint(app, user_only=True)
