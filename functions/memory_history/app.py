"""GET /memory/{id}/history — every kept version of a memory, the current one first."""

from synapse.core.models.base import Scope
from synapse.core.models.memory import MemoryHistory
from synapse.http.caller import InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.get(
    "/memory/<id>/history",
    summary="The versions of a memory, newest first",
    tags=["memories"],
    responses=responses("read", params=False, not_found="no memory with that id (or it has expired)"),
)
def history(id: str, mind: InMind) -> MemoryHistory:
    return memories.history(mind, id)


handler = entrypoint(app, scope=Scope.read)
