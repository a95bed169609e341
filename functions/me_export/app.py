"""GET /me/export — everything stored for the user, as JSON (users only)."""

from synapse.core.models.account import ExportOut
from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.account import privacy

app = resolver()


@app.get(
    "/me/export",
    summary="Export everything (users only)",
    tags=["privacy"],
    responses=responses("user", params=False),
)
def export(who: Caller) -> ExportOut:
    return privacy.export(who.user_id)


handler = entrypoint(app, user_only=True)
