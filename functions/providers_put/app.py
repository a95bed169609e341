"""PUT /providers/{provider} — store the user's own provider API key, KMS-encrypted (users only)."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends
from aws_lambda_powertools.event_handler.openapi.params import Path

from synapse.core.models.account import ProviderIn, ProviderInfo
from synapse.core.models.base import Provider
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.account import providers

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.put(
    "/providers/<provider>",
    summary="Store a provider API key (users only)",
    tags=["providers"],
    responses=api.responses("user", body=True),
)
def put_provider(
    provider: Annotated[Provider, Path()], body: ProviderIn, who: Annotated[Principal, Depends(api.caller)]
) -> ProviderInfo:
    return providers.put(who.user_id, provider.value, body.api_key)


handler = api.entrypoint(app, user_only=True)
