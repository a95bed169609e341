"""POST /webhooks — register a webhook (users only); its signing secret is shown once."""

from aws_lambda_powertools.event_handler import Response

from synapse.core.models.webhooks import WebhookCreated, WebhookIn
from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.envelope import JSON
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.webhooks import registry

app = resolver()


@app.post(
    "/webhooks",
    summary="Register a webhook (users only)",
    description=(
        "Deliveries are HTTPS POSTs of `{type, timestamp, data}` signed as Standard Webhooks says "
        "(`webhook-id`, `webhook-timestamp`, `webhook-signature`); verify them with its libraries and "
        "the `secret` of this answer (shown once). Any 2xx within 10 s is success; otherwise retried "
        "with growing waits for more than 24 hours, the same `webhook-id` each time. A webhook failing "
        "for 5 days is disabled. The URL must be https to a public address (422 otherwise)."
    ),
    tags=["webhooks"],
    responses=responses(
        "user",
        {201: "Registered; the secret is in this answer only"},
        body=True,
        not_found="no mind with that id",
        quota="the user has MAX_WEBHOOKS webhooks (10 by default)",
    ),
)
def create_webhook(body: WebhookIn, who: Caller) -> Response[WebhookCreated]:
    return Response(status_code=201, content_type=JSON, body=registry.create(who.user_id, body))


handler = entrypoint(app, user_only=True)
