"""DELETE /me — delete everything stored for the user (users only)."""

from synapse.core.models.base import Deleted
from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.account import privacy

app = resolver()


@app.delete(
    "/me",
    summary="Delete everything (users only)",
    tags=["privacy"],
    responses=responses("user", params=False),
)
def delete_me(who: Caller) -> Deleted:
    return Deleted(deleted=privacy.delete(who.user_id))


handler = entrypoint(app, user_only=True)
