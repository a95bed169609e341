"""POST /memory/recall — the memories most relevant to a query, and the identity line."""

from synapse.core.models.base import Scope
from synapse.core.models.chat import RecallIn, RecallOut
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import recall

app = resolver()


@app.post(
    "/memory/recall",
    summary="Semantic + full-text recall",
    tags=["conversation"],
    responses=responses("read", body=True),
)
def recall_route(body: RecallIn, who: Caller, mind: InMind) -> RecallOut:
    return recall.recall(who, mind, body)


handler = entrypoint(app, scope=Scope.read)
