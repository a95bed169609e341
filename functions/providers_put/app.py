"""PUT /providers/{provider} — store the user's own provider API key, KMS-encrypted (users only)."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends

from synapse import api, providers
from synapse.models import ProviderIn, ProviderInfo
from synapse.principal import Principal

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.put("/providers/<provider>", summary="Store a provider API key (users only)", tags=["providers"])
def put_provider(
    provider: str, body: ProviderIn, who: Annotated[Principal, Depends(api.caller)]
) -> ProviderInfo:
    return providers.put(who.user_id, provider, body.api_key)


handler = api.entrypoint(app, user_only=True)
