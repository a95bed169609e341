"""POST /minds — a new mind (a separate memory space), e.g. one per agent or product."""

from aws_lambda_powertools.event_handler import Response

from synapse.core.models.minds import MindIn, MindOut
from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.envelope import JSON
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.account import minds

app = resolver()


@app.post(
    "/minds",
    summary="Create a mind (users only)",
    tags=["minds"],
    responses=responses("user", {201: "Created"}, body=True, conflict="a mind of that name exists already"),
)
def create(body: MindIn, who: Caller) -> Response[MindOut]:
    return Response(status_code=201, content_type=JSON, body=minds.create(who, body))


handler = entrypoint(app, user_only=True)
