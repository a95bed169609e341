"""POST /memory/context — everything one chat turn's prompt needs, in one call: identity, the most
relevant memories (as POST /memory/recall answers them), the session's latest summary, its recent
messages, and the ready prompt block."""

from synapse.core.models.base import Scope
from synapse.core.models.chat import ContextIn, ContextOut
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import context

app = resolver()


@app.post(
    "/memory/context",
    summary="Context for one chat turn",
    tags=["conversation"],
    responses=responses("read", body=True),
)
def context_route(body: ContextIn, who: Caller, mind: InMind) -> ContextOut:
    return context.context(who, mind, body)


handler = entrypoint(app, scope=Scope.read)
