"""GET /me/export — everything stored for the user, as JSON (users only)."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends

from synapse.core.models.account import ExportOut
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.account import privacy

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.get(
    "/me/export",
    summary="Export everything (users only)",
    tags=["privacy"],
    responses=api.responses("user", params=False),
)
def export(who: Annotated[Principal, Depends(api.caller)]) -> ExportOut:
    return privacy.export(who.user_id)


handler = api.entrypoint(app, user_only=True)
