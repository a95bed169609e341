"""DELETE /memory/{id} — delete a memory."""

from aws_lambda_powertools.event_handler import Response

from synapse.core.models.base import Scope
from synapse.http.caller import InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import no_content, responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.delete(
    "/memory/<id>",
    summary="Delete a memory",
    tags=["memories"],
    responses=responses(
        "write", {204: no_content("Deleted")}, params=False, not_found="no memory with that id"
    ),
)
def delete(id: str, mind: InMind) -> Response[None]:
    memories.delete(mind, id)
    return Response(status_code=204)


handler = entrypoint(app, scope=Scope.write)
