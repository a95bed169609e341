"""GET /webhooks — the user's webhooks (never their secrets)."""

from synapse.core.models.webhooks import WebhookList
from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.webhooks import registry

app = resolver()


@app.get(
    "/webhooks",
    summary="List webhooks (users only)",
    tags=["webhooks"],
    responses=responses("user", params=False),
)
def list_webhooks(who: Caller) -> WebhookList:
    return registry.list_all(who.user_id)


handler = entrypoint(app, user_only=True)
