"""DELETE /keys/{keyId} — revoke an API key (users only)."""

from aws_lambda_powertools.event_handler import Response

from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import no_content, responses
from synapse.http.resolver import resolver
from synapse.services.account import auth

app = resolver()


@app.delete(
    "/keys/<keyId>",
    summary="Revoke an API key (users only)",
    tags=["keys"],
    responses=responses(
        "user", {204: no_content("Revoked")}, params=False, not_found="no API key with that id"
    ),
)
def delete_key(keyId: str, who: Caller) -> Response[None]:
    auth.revoke_api_key(who.user_id, keyId)
    return Response(status_code=204)


handler = entrypoint(app, user_only=True)
