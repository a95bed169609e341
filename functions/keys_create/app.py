"""POST /keys — issue an API key for an agent (users only); the plain key is shown once."""

from aws_lambda_powertools.event_handler import Response

from synapse.core.models.account import ApiKeyCreated, KeyIn
from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.envelope import JSON
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.account import auth

app = resolver()


@app.post(
    "/keys",
    summary="Create an API key (users only)",
    tags=["keys"],
    responses=responses(
        "user",
        {201: "Created; the plain key is in this answer only"},
        body=True,
        not_found="no mind with that id",
    ),
)
def create_key(body: KeyIn, who: Caller) -> Response[ApiKeyCreated]:
    return Response(status_code=201, content_type=JSON, body=auth.create_api_key(who.user_id, body))


handler = entrypoint(app, user_only=True)
