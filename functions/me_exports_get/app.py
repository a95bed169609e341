"""GET /me/exports/{exportId} — an export's state, and once ready the file's URL (users only)."""

from synapse.core.models.account import ExportJob
from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.account import exports

app = resolver()


@app.get(
    "/me/exports/<exportId>",
    summary="An export's state and its download URL (users only)",
    description=(
        "`pending` while it is written, `failed` if it could not be (ask again), `ready` with `url`: "
        "a presigned download good for an hour from this answer (`expires_at`; ask again for a new "
        "one), `bytes` and `records` (the lines after the header)."
    ),
    tags=["privacy"],
    responses=responses("user", params=False, not_found="no export with that id (or past its 24 hours)"),
)
def get_export(exportId: str, who: Caller) -> ExportJob:
    return exports.status(who.user_id, exportId)


handler = entrypoint(app, user_only=True)
