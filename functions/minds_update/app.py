"""PATCH /minds/{mindId} — a mind's settings: name, description, timezone, review_agent_changes."""

from synapse.core.models.minds import MindOut, MindPatch
from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.account import minds

app = resolver()


@app.patch(
    "/minds/<mindId>",
    summary="Change a mind's settings (users only)",
    description=(
        "Any of `name`, `description`, `timezone` (an IANA name such as `Asia/Bangkok`; relative dates "
        "and periods of this mind are read in it; default `UTC`) and `review_agent_changes` (default "
        "true). Only the fields sent change; `description: null` clears it, `timezone: null` and "
        "`review_agent_changes: null` restore the defaults. The default mind (`default`) is patchable "
        "too, except its name, which is the userId. Answers the mind."
    ),
    tags=["minds"],
    responses=responses(
        "user",
        body=True,
        not_found="no mind with that id",
        conflict="another mind has that name",
    ),
)
def update(mindId: str, body: MindPatch, who: Caller) -> MindOut:
    return minds.update(who, mindId, body)


handler = entrypoint(app, user_only=True)
