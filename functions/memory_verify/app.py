"""POST /memory/{id}/verify — a human marks a memory verified (agents get 403)."""

from synapse.core.models.memory import Memory
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.post(
    "/memory/<id>/verify",
    summary="Verify a memory (users only)",
    tags=["memories"],
    responses=responses("user", params=False, not_found="no memory with that id (or it has expired)"),
)
def verify(id: str, who: Caller, mind: InMind) -> Memory:
    return memories.verify(who, mind, id)


handler = entrypoint(app, user_only=True)
