"""GET /health — liveness (public)."""

from synapse.core.models.base import Health
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import public_operation, responses
from synapse.http.resolver import resolver

app = resolver()


@app.get(
    "/health",
    summary="Liveness",
    tags=["service"],
    responses=responses("public", params=False),
    openapi_extensions=public_operation(),
)
def health() -> Health:
    return Health()


handler = entrypoint(app, public=True)
