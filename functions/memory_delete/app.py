"""DELETE /memory/{id} — delete a memory."""

from aws_lambda_powertools.event_handler import Response

from synapse.core.models.base import Scope
from synapse.core.models.review import ProposalAnswer
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.envelope import JSON
from synapse.http.openapi import no_content, proposed, responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.delete(
    "/memory/<id>",
    summary="Delete a memory",
    tags=["memories"],
    responses=responses(
        "write",
        {
            204: no_content("Deleted"),
            202: proposed("An agent's deletion of a verified memory: a proposal awaits a person"),
        },
        params=False,
        not_found="no memory with that id",
    ),
)
def delete(id: str, who: Caller, mind: InMind) -> Response[ProposalAnswer | None]:
    proposal = memories.delete(who, mind, id)
    if proposal is not None:
        return Response(status_code=202, content_type=JSON, body=ProposalAnswer(proposal=proposal))
    return Response(status_code=204)


handler = entrypoint(app, scope=Scope.write)
