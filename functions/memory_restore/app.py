"""POST /memory/{id}/restore — an older version's content, tags, priority, confidence and expiry, as a
new version (nothing is lost: the version it replaces is kept too)."""

from aws_lambda_powertools.event_handler import Response

from synapse.core.models.base import Scope
from synapse.core.models.memory import Memory, RestoreIn
from synapse.core.models.review import Proposal, ProposalAnswer
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.envelope import JSON
from synapse.http.openapi import answer, proposed, responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.post(
    "/memory/<id>/restore",
    summary="Restore a version of a memory",
    tags=["memories"],
    responses=responses(
        "write",
        {
            200: answer("OK", Memory),
            202: proposed("An agent's restore of a verified memory: a proposal awaits a person"),
        },
        body=True,
        not_found="no memory with that id, or no such version of it",
    ),
)
def restore(id: str, body: RestoreIn, who: Caller, mind: InMind) -> Response[Memory | ProposalAnswer]:
    result = memories.restore(who, mind, id, body)
    if isinstance(result, Proposal):
        return Response(status_code=202, content_type=JSON, body=ProposalAnswer(proposal=result))
    return Response(status_code=200, content_type=JSON, body=result)


handler = entrypoint(app, scope=Scope.write)
