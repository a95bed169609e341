"""GET /memory/{id} — one memory."""

from synapse.core.models.base import Scope
from synapse.core.models.memory import Memory
from synapse.http.caller import InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.get(
    "/memory/<id>",
    summary="Get a memory",
    tags=["memories"],
    responses=responses("read", params=False, not_found="no memory with that id (or it has expired)"),
)
def get(id: str, mind: InMind) -> Memory:
    return memories.get(mind, id)


handler = entrypoint(app, scope=Scope.read)
