"""GET /minds — every mind of the user, the default one first, with its number of memories."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends

from synapse.core.models.minds import MindList
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.account import minds

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.get(
    "/minds", summary="List minds (users only)", tags=["minds"], responses=api.responses("user", params=False)
)
def list_minds(who: Annotated[Principal, Depends(api.caller)]) -> MindList:
    return minds.list_all(who)


handler = api.entrypoint(app, user_only=True)
