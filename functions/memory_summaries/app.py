"""GET /memory/summaries/{sessionId} — a session's summary chunks, oldest first."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Path

from synapse.core.models.base import Scope, SessionIdPath
from synapse.core.models.chat import SummaryList
from synapse.http.caller import InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.chat import sessions

app = resolver()


@app.get(
    "/memory/summaries/<sessionId>",
    summary="Session summaries",
    tags=["conversation"],
    responses=responses("read"),
)
def summaries(
    sessionId: Annotated[SessionIdPath, Path()],
    mind: InMind,
) -> SummaryList:
    return sessions.chunks(mind, sessionId)


handler = entrypoint(app, scope=Scope.read)
