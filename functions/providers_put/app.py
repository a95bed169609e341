"""PUT /providers/{provider} — store the user's own provider API key, KMS-encrypted (users only)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Path

from synapse.core.models.account import ProviderIn, ProviderInfo
from synapse.core.models.base import Provider
from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.account import providers

app = resolver()


@app.put(
    "/providers/<provider>",
    summary="Store a provider API key (users only)",
    tags=["providers"],
    responses=responses("user", body=True),
)
def put_provider(provider: Annotated[Provider, Path()], body: ProviderIn, who: Caller) -> ProviderInfo:
    return providers.put(who.user_id, provider.value, body.api_key)


handler = entrypoint(app, user_only=True)
