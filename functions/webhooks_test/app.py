"""POST /webhooks/{webhookId}/test — send a signed `webhook.test` delivery (users only)."""

from aws_lambda_powertools.event_handler import Response

from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.envelope import JSON
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.webhooks import registry

app = resolver()


@app.post(
    "/webhooks/<webhookId>/test",
    summary="Send a test delivery (users only)",
    description="Queues a `webhook.test` delivery, signed and retried like any other; see its deliveries.",
    tags=["webhooks"],
    responses=responses("user", {202: "Queued"}, params=False, not_found="no webhook with that id"),
)
def test_webhook(webhookId: str, who: Caller) -> Response[dict[str, str]]:
    registry.send_test(who.user_id, webhookId)
    return Response(status_code=202, content_type=JSON, body={"status": "queued"})


handler = entrypoint(app, user_only=True)
