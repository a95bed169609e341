"""The resolver of every HTTP function: Powertools' `APIGatewayHttpResolver` with validation, the
service's JSON, and every failure mapped to the contract's envelope in one place.

A function is its route and its call:

    app = resolver()

    @app.get("/memory/{id}", responses=responses("read", ...))
    def get(id: str, mind: InMind) -> Memory:
        return memories.get(mind, id)

    handler = entrypoint(app, scope=Scope.read)
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from synapse.core.errors import NotFound, SynapseError
from synapse.core.observability import logger
from synapse.http import body
from synapse.http.envelope import JSON, error_response, invalid, to_json


def resolver() -> APIGatewayHttpResolver:
    """A function's resolver, set up as every function's is."""
    app = APIGatewayHttpResolver(
        enable_validation=True, serializer=to_json, json_body_deserializer=body.json_body
    )
    app.use(middlewares=[_utf8_json])

    @app.exception_handler(SynapseError)
    def _synapse_error(err: SynapseError) -> Response[Any]:
        if err.status >= 500:
            logger.warning("request failed", extra={"error_code": err.code})
        return error_response(err)

    @app.exception_handler(RequestValidationError)
    def _invalid(err: RequestValidationError) -> Response[Any]:
        return error_response(invalid(err.errors()))

    @app.not_found
    def _no_route(_: Exception) -> Response[Any]:
        return error_response(NotFound("No such route."))

    @app.exception_handler(Exception)
    def _unexpected(err: Exception) -> Response[Any]:
        # the type only: messages and traces may carry user content or secrets
        logger.error("unhandled error", extra={"error_type": type(err).__name__})
        return error_response(SynapseError("Something went wrong on our side."))

    return app


def _utf8_json(app: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[Any]:
    """The contract says `application/json; charset=utf-8`; Powertools' default omits the charset."""
    response = next_middleware(app)
    if response.headers.get("Content-Type") == "application/json":
        response.headers["Content-Type"] = JSON
    return response
