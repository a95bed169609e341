"""GET /memory/summaries/{sessionId} — a session's summary chunks, oldest first."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends
from aws_lambda_powertools.event_handler.openapi.params import Path

from synapse.core.models.base import Scope, SessionIdPath
from synapse.core.models.chat import SummaryList
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.chat import sessions

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.get(
    "/memory/summaries/<sessionId>",
    summary="Session summaries",
    tags=["conversation"],
    responses=api.responses("read"),
)
def summaries(
    sessionId: Annotated[SessionIdPath, Path()],
    who: Annotated[Principal, Depends(api.caller)],
) -> SummaryList:
    return sessions.chunks(who, sessionId)


handler = api.entrypoint(app, scope=Scope.read)
