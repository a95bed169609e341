"""POST /memory/proposals/{proposalId}/accept — a person's yes to an agent's proposal, optionally edited."""

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body

from synapse.core.models.memory import Memory
from synapse.core.models.review import AcceptIn
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.envelope import JSON
from synapse.http.openapi import answer, no_content, responses
from synapse.http.resolver import resolver
from synapse.services.review import proposals

app = resolver()


@app.post(
    "/memory/proposals/<proposalId>/accept",
    summary="Accept a proposal, with optional edits (users only)",
    tags=["review"],
    responses=responses(
        "user",
        {
            200: answer("The memory, a new version (change: accepted, verified)", Memory),
            204: no_content("The proposed deletion is done"),
        },
        body=True,
        not_found="no pending proposal with that id",
        conflict="the memory changed since the proposal was made (base_version is not its version)",
    ),
)
def accept(
    proposalId: str, who: Caller, mind: InMind, body: Annotated[AcceptIn | None, Body()] = None
) -> Response[Memory | None]:
    memory = proposals.accept(who, mind, proposalId, body)
    if memory is None:
        return Response(status_code=204)
    return Response(status_code=200, content_type=JSON, body=memory)


handler = entrypoint(app, user_only=True)
