"""POST /memory — create a memory, or update the one with the same (category, key)."""

from aws_lambda_powertools.event_handler import Response

from synapse.core.models.base import Scope
from synapse.core.models.memory import Memory, MemoryIn
from synapse.core.models.review import Proposal, ProposalAnswer
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.envelope import JSON
from synapse.http.openapi import answer, proposed, responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.post(
    "/memory",
    summary="Create or update a memory by (category, key)",
    tags=["memories"],
    responses=responses(
        "write",
        {
            201: answer("Created", Memory),
            200: answer("Updated (same category and key)", Memory),
            202: proposed("An agent's change of a verified memory: a proposal awaits a person"),
        },
        body=True,
        conflict="quota_exceeded: the mind holds MAX_MEMORIES_PER_MIND memories",
    ),
)
def create(body: MemoryIn, who: Caller, mind: InMind) -> Response[Memory | ProposalAnswer]:
    result = memories.put(who, mind, body)
    if isinstance(result, Proposal):
        return Response(status_code=202, content_type=JSON, body=ProposalAnswer(proposal=result))
    memory, created = result
    return Response(status_code=201 if created else 200, content_type=JSON, body=memory)


handler = entrypoint(app, scope=Scope.write)
