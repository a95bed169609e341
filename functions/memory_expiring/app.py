"""GET /memory/expiring — memories expiring within a window, soonest first."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends
from aws_lambda_powertools.event_handler.openapi.params import Query

from synapse.core.models.base import WITHIN_PATTERN, Scope
from synapse.core.models.memory import Memories
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.memory import memories

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.get(
    "/memory/expiring", summary="Memories expiring soon", tags=["memories"], responses=api.responses("read")
)
def expiring(
    who: Annotated[Principal, Depends(api.caller)],
    within: Annotated[
        str,
        Query(
            max_length=12,
            pattern=WITHIN_PATTERN,
            description="A number of minutes, hours or days: 30m, 24h, 7d (1m to 3650d)",
        ),
    ] = "7d",
) -> Memories:
    return Memories(memories=memories.expiring(who, within))


handler = api.entrypoint(app, scope=Scope.read)
