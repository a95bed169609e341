"""POST /minds/{mindId}/consolidate — merge duplicates and summarize old low-priority memories."""

from synapse.core.models.review import Consolidated
from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.review import consolidate

app = resolver()


@app.post(
    "/minds/<mindId>/consolidate",
    summary="Consolidate a mind's unverified memories (users only)",
    tags=["minds"],
    responses=responses("user", params=False, not_found="no mind with that id"),
)
def consolidate_mind(mindId: str, who: Caller) -> Consolidated:
    return consolidate.consolidate_mind(who, mindId)


handler = entrypoint(app, user_only=True)
