"""POST /memory/ingest — store a conversation's turns and remember what matters in them.

A retry of the same request within an hour returns the first answer and creates nothing new
(Powertools idempotency on IdempotencyTable). "The same request" is the same user, session and
messages; or, when the client sends an `Idempotency-Key` header, the same user and key (then the
same turns sent twice under two keys are two ingests, and one key reused with another body is a 422).
"""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends
from aws_lambda_powertools.event_handler.openapi.params import Header
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyPersistenceLayerError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.idempotency.serialization.pydantic import PydanticSerializer
from aws_lambda_powertools.utilities.typing import LambdaContext

from synapse import api, ingest, store
from synapse.auth import Principal
from synapse.config import settings
from synapse.errors import Conflict, UpstreamUnavailable, ValidationFailed
from synapse.models import IngestIn, IngestOut, Scope

app = APIGatewayHttpResolver(enable_validation=True, serializer=api.to_json)
api.setup(app)
# without a client key the whole request is the key; with one, (user, key) is, and the body must match
_by_body = IdempotencyConfig(expires_after_seconds=3600)
_by_client_key = IdempotencyConfig(
    expires_after_seconds=3600,
    event_key_jmespath="[userId, idempotencyKey]",
    payload_validation_jmespath="body",
)


def _run(request: dict[str, Any], who: Principal) -> IngestOut:
    body = IngestIn.model_validate(request["body"])
    return ingest.ingest(who, body, client_key=request["idempotencyKey"])


def _ingest_once(user_id: str, config: IdempotencyConfig) -> Any:
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
        config=config,
        output_serializer=PydanticSerializer,
    )


@app.post("/memory/ingest", summary="Ingest conversation turns", tags=["conversation"])
def ingest_route(
    body: IngestIn,
    who: Annotated[Principal, Depends(api.caller)],
    idempotency_key: Annotated[
        str | None,
        Header(
            min_length=1,
            max_length=255,
            description="Optional. The same key within an hour is the same ingest (a retry).",
        ),
    ] = None,
) -> IngestOut:
    # the idempotency key covers the user: two users' identical requests are different requests
    user_id = who.check_user_id(body.userId)
    request = {
        "userId": user_id,
        "idempotencyKey": idempotency_key,
        "body": {**body.model_dump(mode="json"), "userId": user_id},
    }
    config = _by_client_key if idempotency_key else _by_body
    try:
        result: IngestOut = _ingest_once(user_id, config)(request=request, who=who)
    except IdempotencyAlreadyInProgressError as exc:
        raise Conflict("The same ingest is being processed right now; retry in a moment.") from exc
    except IdempotencyValidationError as exc:
        raise ValidationFailed.at(
            ["header", "Idempotency-Key"], "was already used with a different body"
        ) from exc
    except IdempotencyPersistenceLayerError as exc:
        raise UpstreamUnavailable("The database is unavailable; try again shortly.", retry_after=2) from exc
    return result


_entry = api.entrypoint(app, scope=Scope.write)


def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    _by_body.register_lambda_context(context)
    _by_client_key.register_lambda_context(context)
    return _entry(event, context)
