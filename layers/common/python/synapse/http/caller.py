"""Who is calling, and the mind the request acts in, as Powertools dependencies of a route.

    def history(id: str, mind: InMind) -> MemoryHistory: ...
    def update(id: str, body: MemoryPatch, who: Caller, mind: InMind) -> Memory: ...

`InMind` is resolved once per request, from the caller (the dependency is nested on `Caller`, and
Powertools resolves each dependency once per request however many parameters name it): the mind's
item is read at most once, and every service the route calls acts in the same `Mind`. Tests replace
either with `app.dependency_overrides[caller] = ...` (or `[mind]`).
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Depends
from aws_lambda_powertools.event_handler.request import Request

from synapse.core.principal import Principal
from synapse.http.entrypoint import authorizer_context
from synapse.services.account import minds
from synapse.store.minds import Mind

MIND_HEADER = "x-mind-id"


def caller(request: Request) -> Principal:
    """The principal, from the authorizer's context only, acting in the mind the `X-Mind-Id` header
    names (403 for a Mind Key naming another mind)."""
    return caller_of(request.resolved_event.raw_event)


def caller_of(event: dict[str, Any]) -> Principal:
    """`caller` from an API Gateway v2 event itself."""
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    return Principal.from_context(authorizer_context(event)).in_mind(headers.get(MIND_HEADER))


Caller = Annotated[Principal, Depends(caller)]


def mind(who: Caller) -> Mind:
    """The mind the caller acts in: 404 for a mind the user does not have."""
    return minds.resolve(who)


InMind = Annotated[Mind, Depends(mind)]
