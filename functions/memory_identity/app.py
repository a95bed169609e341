"""GET /memory/identity/{userId} — the user's identity line."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Path

from synapse.core.models.base import Scope, UserIdPath
from synapse.core.models.memory import IdentityOut
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import identity

app = resolver()


@app.get(
    "/memory/identity/<userId>",
    summary="The identity line",
    tags=["conversation"],
    responses=responses("read"),
)
def identity_route(
    userId: Annotated[UserIdPath, Path()],
    who: Caller,
    mind: InMind,
) -> IdentityOut:
    return identity.identity_of(who, mind, userId)


handler = entrypoint(app, scope=Scope.read)
