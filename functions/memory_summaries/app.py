"""GET /memory/summaries/{sessionId} — a session's summary chunks, oldest first."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends

from synapse import api, sessions
from synapse.models import Scope, SummaryList
from synapse.principal import Principal

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.get("/memory/summaries/<sessionId>", summary="Session summaries", tags=["conversation"])
def summaries(sessionId: str, who: Annotated[Principal, Depends(api.caller)]) -> SummaryList:
    return sessions.chunks(who, sessionId)


handler = api.entrypoint(app, scope=Scope.read)
