"""GET /webhooks/{webhookId}/deliveries — a webhook's latest delivery attempts (users only)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from synapse.core.models.webhooks import DeliveryList
from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.webhooks import registry

app = resolver()


@app.get(
    "/webhooks/<webhookId>/deliveries",
    summary="A webhook's latest delivery attempts, newest first (users only)",
    description="Kept 7 days. `error` holds a short excerpt of a failed answer at most, never its body.",
    tags=["webhooks"],
    responses=responses("user", not_found="no webhook with that id"),
)
def webhook_deliveries(
    webhookId: str,
    who: Caller,
    limit: Annotated[int, Query(ge=1, le=100, description="Attempts at most")] = 20,
) -> DeliveryList:
    return registry.deliveries(who.user_id, webhookId, limit)


handler = entrypoint(app, user_only=True)
