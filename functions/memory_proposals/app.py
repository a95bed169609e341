"""GET /memory/proposals — the mind's pending proposals (agents' changes of verified memories)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from synapse.core.models.review import ProposalList
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.review import proposals

app = resolver()


@app.get(
    "/memory/proposals",
    summary="List pending proposals, newest first (users only)",
    tags=["review"],
    responses=responses("user"),
)
def list_proposals(
    who: Caller,
    mind: InMind,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: Annotated[str | None, Query(max_length=1024)] = None,
) -> ProposalList:
    return proposals.pending(who, mind, limit, cursor)


handler = entrypoint(app, user_only=True)
