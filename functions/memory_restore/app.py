"""POST /memory/{id}/restore — an older version's content, tags, priority, confidence and expiry, as a
new version (nothing is lost: the version it replaces is kept too)."""

from synapse.core.models.base import Scope
from synapse.core.models.memory import Memory, RestoreIn
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.post(
    "/memory/<id>/restore",
    summary="Restore a version of a memory",
    tags=["memories"],
    responses=responses("write", body=True, not_found="no memory with that id, or no such version of it"),
)
def restore(id: str, body: RestoreIn, who: Caller, mind: InMind) -> Memory:
    return memories.restore(who, mind, id, body)


handler = entrypoint(app, scope=Scope.write)
