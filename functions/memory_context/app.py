"""POST /memory/context — everything one chat turn's prompt needs, in one call: identity, the most
relevant memories (as POST /memory/recall answers them), the session's latest summary, its recent
messages, and the ready prompt block."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends

from synapse.core.models.base import Scope
from synapse.core.models.chat import ContextIn, ContextOut
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.memory import context

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.post(
    "/memory/context",
    summary="Context for one chat turn",
    tags=["conversation"],
    responses=api.responses("read", body=True),
)
def context_route(body: ContextIn, who: Annotated[Principal, Depends(api.caller)]) -> ContextOut:
    return context.context(who, body)


handler = api.entrypoint(app, scope=Scope.read)
