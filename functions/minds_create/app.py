"""POST /minds — a new mind (a separate memory space), e.g. one per agent or product."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends, Response

from synapse.core.models.minds import MindIn, MindOut
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.account import minds

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.post(
    "/minds",
    summary="Create a mind (users only)",
    tags=["minds"],
    responses=api.responses(
        "user", {201: "Created"}, body=True, conflict="a mind of that name exists already"
    ),
)
def create(body: MindIn, who: Annotated[Principal, Depends(api.caller)]) -> Response[MindOut]:
    return Response(status_code=201, content_type=api.JSON, body=minds.create(who, body))


handler = api.entrypoint(app, user_only=True)
