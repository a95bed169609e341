"""GET /memory/expiring — memories expiring within a window, soonest first."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from synapse.core.models.base import WITHIN_PATTERN, Scope
from synapse.core.models.memory import Memories
from synapse.http.caller import InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import memories

app = resolver()


@app.get("/memory/expiring", summary="Memories expiring soon", tags=["memories"], responses=responses("read"))
def expiring(
    mind: InMind,
    within: Annotated[
        str,
        Query(
            max_length=12,
            pattern=WITHIN_PATTERN,
            description="A number of minutes, hours or days: 30m, 24h, 7d (1m to 3650d)",
        ),
    ] = "7d",
) -> Memories:
    return Memories(memories=memories.expiring(mind, within))


handler = entrypoint(app, scope=Scope.read)
