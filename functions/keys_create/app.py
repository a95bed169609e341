"""POST /keys — issue an API key for an agent (users only); the plain key is shown once."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends, Response

from synapse.core.models.account import ApiKeyCreated, KeyIn
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.account import auth

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.post(
    "/keys",
    summary="Create an API key (users only)",
    tags=["keys"],
    responses=api.responses(
        "user",
        {201: "Created; the plain key is in this answer only"},
        body=True,
        not_found="no mind with that id",
    ),
)
def create_key(body: KeyIn, who: Annotated[Principal, Depends(api.caller)]) -> Response[ApiKeyCreated]:
    return Response(status_code=201, content_type=api.JSON, body=auth.create_api_key(who.user_id, body))


handler = api.entrypoint(app, user_only=True)
