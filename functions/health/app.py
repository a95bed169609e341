"""GET /health — liveness (public)."""

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

from synapse.core.models.base import Health
from synapse.http import api

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.get(
    "/health",
    summary="Liveness",
    tags=["service"],
    responses=api.responses("public", params=False),
    openapi_extensions=api.public_operation(),
)
def health() -> Health:
    return Health()


handler = api.entrypoint(app, public=True)
