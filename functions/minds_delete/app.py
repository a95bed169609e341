"""DELETE /minds/{mindId} — a mind, everything in it, and its keys (they stop working at once)."""

from aws_lambda_powertools.event_handler import Response

from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import no_content, responses
from synapse.http.resolver import resolver
from synapse.services.account import minds

app = resolver()


@app.delete(
    "/minds/<mindId>",
    summary="Delete a mind and everything in it (users only)",
    tags=["minds"],
    responses=responses(
        "user",
        {204: no_content("Deleted")},
        params=False,
        not_found="no mind with that id",
        conflict="the default mind cannot be deleted",
    ),
)
def delete(mindId: str, who: Caller) -> Response[None]:
    minds.delete(who, mindId)
    return Response(status_code=204)


handler = entrypoint(app, user_only=True)
