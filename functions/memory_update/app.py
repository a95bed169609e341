"""PUT /memory/{id} — change a memory's content, tags, priority, confidence or expiry."""

from synapse.core.models.base import Scope
from synapse.core.models.memory import Memory, MemoryPatch
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.put(
    "/memory/<id>",
    summary="Update a memory",
    tags=["memories"],
    responses=responses("write", body=True, not_found="no memory with that id"),
)
def update(id: str, body: MemoryPatch, who: Caller, mind: InMind) -> Memory:
    return memories.update(who, mind, id, body)


handler = entrypoint(app, scope=Scope.write)
