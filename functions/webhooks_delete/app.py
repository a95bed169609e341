"""DELETE /webhooks/{webhookId} — stop delivering to a webhook (users only)."""

from aws_lambda_powertools.event_handler import Response

from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import no_content, responses
from synapse.http.resolver import resolver
from synapse.services.webhooks import registry

app = resolver()


@app.delete(
    "/webhooks/<webhookId>",
    summary="Delete a webhook (users only)",
    tags=["webhooks"],
    responses=responses(
        "user", {204: no_content("Deleted")}, params=False, not_found="no webhook with that id"
    ),
)
def delete_webhook(webhookId: str, who: Caller) -> Response[None]:
    registry.delete(who.user_id, webhookId)
    return Response(status_code=204)


handler = entrypoint(app, user_only=True)
