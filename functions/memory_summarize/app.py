"""POST /memory/summarize — summarize given messages, or the session's last stored ones, as a chunk."""

from synapse.core.models.base import Scope
from synapse.core.models.chat import SummarizeIn, SummaryOut
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.chat import sessions

app = resolver()


@app.post(
    "/memory/summarize",
    summary="Summarize a session",
    tags=["conversation"],
    responses=responses("write", body=True, not_found="no messages given and none stored for the session"),
)
def summarize(body: SummarizeIn, who: Caller, mind: InMind) -> SummaryOut:
    return sessions.summarize(who, mind, body)


handler = entrypoint(app, scope=Scope.write)
