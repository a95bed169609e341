"""GET /providers — the user's provider keys, as hints only (users only)."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends

from synapse.core.models.account import ProviderList
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.account import providers

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.get(
    "/providers",
    summary="List provider keys (users only)",
    tags=["providers"],
    responses=api.responses("user", params=False),
)
def list_providers(who: Annotated[Principal, Depends(api.caller)]) -> ProviderList:
    return ProviderList(providers=providers.list_all(who.user_id))


handler = api.entrypoint(app, user_only=True)
