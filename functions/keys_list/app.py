"""GET /keys — the user's API keys (hints only, never the plain key)."""

from synapse.core.models.account import ApiKeyList
from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.account import auth

app = resolver()


@app.get(
    "/keys",
    summary="List API keys (users only)",
    tags=["keys"],
    responses=responses("user", params=False),
)
def list_keys(who: Caller) -> ApiKeyList:
    return auth.list_api_keys(who.user_id)


handler = entrypoint(app, user_only=True)
