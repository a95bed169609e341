"""GET /memory/summaries/{sessionId} — a session's summary chunks, oldest first."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends
from aws_lambda_powertools.event_handler.openapi.params import Path

from synapse import api, sessions
from synapse.auth import Principal
from synapse.models import Scope, SessionIdPath, SummaryList

app = APIGatewayHttpResolver(enable_validation=True, serializer=api.to_json)
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
    return sessions.chunks(who.user_id, sessionId)


handler = api.entrypoint(app, scope=Scope.read)
