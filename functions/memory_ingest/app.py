"""POST /memory/ingest — store a conversation's turns and remember what matters in them.

A retry of the same request (same user, session and messages) within an hour returns the first
answer and creates nothing new (Powertools idempotency on IdempotencyTable).
"""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyPersistenceLayerError,
)
from aws_lambda_powertools.utilities.idempotency.serialization.pydantic import PydanticSerializer
from aws_lambda_powertools.utilities.typing import LambdaContext

from synapse import api, ingest, store
from synapse.auth import Principal
from synapse.config import settings
from synapse.errors import Conflict, UpstreamUnavailable
from synapse.models import IngestIn, IngestOut, Scope

app = APIGatewayHttpResolver(enable_validation=True, serializer=api.to_json)
api.setup(app)
_config = IdempotencyConfig(expires_after_seconds=3600)


def _run(request: dict[str, Any], who: Principal) -> IngestOut:
    return ingest.ingest(who, IngestIn.model_validate(request))


def _ingest_once(user_id: str) -> Any:
    # Records live in the user's own partition of the idempotency table (`static_pk_value`), so
    # DELETE /me can delete the cached answers, which hold memory texts. Built per request (cheap: the
    # container's one DynamoDB client is reused); the table name is never read at import time.
    persistence = DynamoDBPersistenceLayer(
        table_name=settings().idempotency_table,
        static_pk_value=store.idempotency_pk(user_id),
        sort_key_attr="sk",
        boto3_client=store.client(),
    )
    return idempotent_function(
        _run,
        data_keyword_argument="request",
        persistence_store=persistence,
        config=_config,
        output_serializer=PydanticSerializer,
    )


@app.post("/memory/ingest", summary="Ingest conversation turns", tags=["conversation"])
def ingest_route(body: IngestIn, who: Annotated[Principal, Depends(api.caller)]) -> IngestOut:
    # the idempotency key covers the user: two users' identical requests are different requests
    request = {**body.model_dump(mode="json"), "userId": who.check_user_id(body.userId)}
    try:
        result: IngestOut = _ingest_once(request["userId"])(request=request, who=who)
    except IdempotencyAlreadyInProgressError as exc:
        raise Conflict("The same ingest is being processed right now; retry in a moment.") from exc
    except IdempotencyPersistenceLayerError as exc:
        raise UpstreamUnavailable("The database is unavailable; try again shortly.", retry_after=2) from exc
    return result


_entry = api.entrypoint(app, scope=Scope.write)


def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    _config.register_lambda_context(context)
    return _entry(event, context)
