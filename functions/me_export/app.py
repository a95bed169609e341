"""GET /me/export — everything stored for the user, as JSON (users only); 413 past one response."""

from synapse.core.errors import PayloadTooLarge
from synapse.core.models.account import ExportOut
from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.envelope import to_json
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.account import privacy

app = resolver()

# Lambda answers at most 6 MB (the body, escaped inside the response JSON, and its headers): past
# this the export is refused in words rather than failing as a 502
MAX_EXPORT_BYTES = 5_000_000


@app.get(
    "/me/export",
    summary="Export everything (users only)",
    tags=["privacy"],
    responses=responses(
        "user", params=False, too_large="more than one response carries (POST /me/exports writes a file)"
    ),
)
def export(who: Caller) -> ExportOut:
    out = privacy.export(who.user_id)
    # (measured as sent; serialising twice costs less than the reads behind it)
    if len(to_json(out.model_dump(mode="json")).encode()) > MAX_EXPORT_BYTES:
        raise PayloadTooLarge(
            "The export is larger than one response carries: POST /me/exports writes it to a file."
        )
    return out


handler = entrypoint(app, user_only=True)
