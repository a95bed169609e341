"""POST /memory/recall — the memories most relevant to a query, and the identity line."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends

from synapse.core.models.base import Scope
from synapse.core.models.chat import RecallIn, RecallOut
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.memory import recall

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.post(
    "/memory/recall",
    summary="Semantic + full-text recall",
    tags=["conversation"],
    responses=api.responses("read", body=True),
)
def recall_route(body: RecallIn, who: Annotated[Principal, Depends(api.caller)]) -> RecallOut:
    return recall.recall(who, body)


handler = api.entrypoint(app, scope=Scope.read)
