"""GET /providers — the user's provider keys, as hints only (users only)."""

from synapse.core.models.account import ProviderList
from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.account import providers

app = resolver()


@app.get(
    "/providers",
    summary="List provider keys (users only)",
    tags=["providers"],
    responses=responses("user", params=False),
)
def list_providers(who: Caller) -> ProviderList:
    return ProviderList(providers=providers.list_all(who.user_id))


handler = entrypoint(app, user_only=True)
