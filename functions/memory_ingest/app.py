"""POST /memory/ingest — store a conversation's turns and remember what matters in them.

A retry of the same request within an hour returns the first answer and creates nothing new
(Powertools idempotency on IdempotencyTable). "The same request" is the same user, session and
messages; or, when the client sends an `Idempotency-Key` header, the same user and key (then the
same turns sent twice under two keys are two ingests, and one key reused with another body is a 422).
"""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Header
from aws_lambda_powertools.utilities.typing import LambdaContext

from synapse.core.models.base import Scope
from synapse.core.models.chat import IngestIn, IngestOut
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.chat import ingest

app = resolver()


@app.post(
    "/memory/ingest",
    summary="Ingest conversation turns",
    tags=["conversation"],
    responses=responses(
        "write", body=True, conflict="the same ingest (Idempotency-Key) is being processed right now"
    ),
)
def ingest_route(
    body: IngestIn,
    who: Caller,
    mind: InMind,
    idempotency_key: Annotated[
        str | None,
        Header(
            min_length=1,
            max_length=255,
            description="Optional. The same key within an hour is the same ingest (a retry).",
        ),
    ] = None,
) -> IngestOut:
    return ingest.ingest_once(who, mind, body, idempotency_key)


_entry = entrypoint(app, scope=Scope.write)


def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    ingest.register_lambda_context(context)
    return _entry(event, context)
