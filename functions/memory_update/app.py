"""PUT /memory/{id} — change a memory's content, tags, priority, confidence or expiry."""

from aws_lambda_powertools.event_handler import Response

from synapse.core.models.base import Scope
from synapse.core.models.memory import Memory, MemoryPatch
from synapse.core.models.review import Proposal, ProposalAnswer
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.envelope import JSON
from synapse.http.openapi import answer, proposed, responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.put(
    "/memory/<id>",
    summary="Update a memory",
    tags=["memories"],
    responses=responses(
        "write",
        {200: answer("OK", Memory), 202: proposed()},
        body=True,
        not_found="no memory with that id",
    ),
)
def update(id: str, body: MemoryPatch, who: Caller, mind: InMind) -> Response[Memory | ProposalAnswer]:
    result = memories.update(who, mind, id, body)
    if isinstance(result, Proposal):
        return Response(status_code=202, content_type=JSON, body=ProposalAnswer(proposal=result))
    return Response(status_code=200, content_type=JSON, body=result)


handler = entrypoint(app, scope=Scope.write)
