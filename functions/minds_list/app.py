"""GET /minds — every mind of the user, the default one first, with its number of memories."""

from synapse.core.models.minds import MindList
from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.account import minds

app = resolver()


@app.get(
    "/minds", summary="List minds (users only)", tags=["minds"], responses=responses("user", params=False)
)
def list_minds(who: Caller) -> MindList:
    return minds.list_all(who)


handler = entrypoint(app, user_only=True)
