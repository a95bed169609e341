"""POST /memory/proposals/{proposalId}/decline — a person's no: the proposal is gone, the memory unchanged."""

from aws_lambda_powertools.event_handler import Response

from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import no_content, responses
from synapse.http.resolver import resolver
from synapse.services.review import proposals

app = resolver()


@app.post(
    "/memory/proposals/<proposalId>/decline",
    summary="Decline a proposal (users only)",
    tags=["review"],
    responses=responses(
        "user", {204: no_content("Declined")}, params=False, not_found="no pending proposal with that id"
    ),
)
def decline(proposalId: str, who: Caller, mind: InMind) -> Response[None]:
    proposals.decline(who, mind, proposalId)
    return Response(status_code=204)


handler = entrypoint(app, user_only=True)
