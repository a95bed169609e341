"""POST /me/exports — write everything to a JSON Lines file in the background (users only)."""

from aws_lambda_powertools.event_handler import Response

from synapse.core.models.account import ExportStarted
from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.envelope import JSON
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.account import exports

app = resolver()


@app.post(
    "/me/exports",
    summary="Export everything to a file, in the background (users only)",
    description=(
        "Any size: the file is JSON Lines (a header line, then one record a line, each with its "
        "`type`: mind, memory with its history, summary, session, message, key, provider, webhook; "
        "keys, providers and webhooks as hints). Poll `GET /me/exports/{exportId}` for its URL. The "
        "file is deleted 24 hours after this call, or with `DELETE /me`. While an export is being "
        "written, asking again answers that export."
    ),
    tags=["privacy"],
    responses=responses("user", {202: "Accepted: the export is being written"}, params=False),
)
def start_export(who: Caller) -> Response[ExportStarted]:
    return Response(status_code=202, content_type=JSON, body=exports.start(who.user_id))


handler = entrypoint(app, user_only=True)
