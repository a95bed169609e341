"""HTTP plumbing shared by every function: the resolver's error envelope, the caller, observability.

Each function builds its own `APIGatewayHttpResolver(enable_validation=True)` (so Powertools'
OpenAPI merge can find it), calls `setup(app)`, and exports `handler = entrypoint(app, ...)`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, cast

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.request import Request
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.utilities.typing import LambdaContext

from synapse.errors import (
    InvalidJson,
    NotFound,
    PayloadTooLarge,
    SynapseError,
    UpstreamUnavailable,
    ValidationFailed,
)
from synapse.models import Scope
from synapse.observability import logger, metrics, tracer
from synapse.principal import Principal

__all__ = ["JSON", "caller", "entrypoint", "json_body", "logger", "metrics", "setup", "to_json", "tracer"]

MAX_BODY_BYTES = 256 * 1024
JSON = "application/json; charset=utf-8"
Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


# the body as `_precheck` parsed it, so that the resolver does not parse it again (`json_body`)
_parsed: ContextVar[tuple[str, Any] | None] = ContextVar("parsed_body", default=None)


def json_body(text: str) -> Any:
    """The resolver's JSON deserializer (`json_body_deserializer=api.json_body`): the value the
    pre-checks already parsed from this very body, else a parse."""
    parsed = _parsed.get()
    if parsed is not None and (parsed[0] is text or parsed[0] == text):
        return parsed[1]
    return json.loads(text)


def to_json(value: Any) -> str:
    """Compact UTF-8 JSON: Thai stays readable (and a third of the bytes of \\u escapes)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def envelope(err: SynapseError) -> dict[str, Any]:
    body: dict[str, Any] = {"code": err.code, "message": err.message}
    if err.details:
        body["details"] = err.details
    return {"error": body}


def _headers(err: SynapseError) -> dict[str, str]:
    headers = {"Content-Type": JSON}
    if isinstance(err, UpstreamUnavailable):
        headers["Retry-After"] = str(err.retry_after)
    return headers


def error_response(err: SynapseError) -> Response[Any]:
    return Response(status_code=err.status, headers=_headers(err), body=to_json(envelope(err)))


def _raw_error(err: SynapseError) -> dict[str, Any]:
    """An API Gateway v2 answer built before the resolver runs (auth, size, JSON)."""
    return {
        "statusCode": err.status,
        "headers": _headers(err),
        "body": to_json(envelope(err)),
        "isBase64Encoded": False,
    }


def _validation_details(errors: Any) -> list[dict[str, Any]]:
    details = []
    for e in errors:
        loc = [p if isinstance(p, int) else str(p) for p in e.get("loc", ())]
        msg = str(e.get("msg", "invalid value"))
        # pydantic prefixes the text of a ValueError raised by our validators with "Value error, "
        details.append({"loc": loc, "msg": msg.removeprefix("Value error, ")})
    return details


def _utf8_json(app: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response[Any]:
    """The contract says `application/json; charset=utf-8`; Powertools' default omits the charset."""
    response = next_middleware(app)
    if response.headers.get("Content-Type") == "application/json":
        response.headers["Content-Type"] = JSON
    return response


def setup(app: APIGatewayHttpResolver) -> APIGatewayHttpResolver:
    """Map every failure to the contract's envelope, in one place."""

    app.use(middlewares=[_utf8_json])

    @app.exception_handler(SynapseError)
    def _synapse_error(err: SynapseError) -> Response[Any]:
        if err.status >= 500:
            logger.warning("request failed", extra={"error_code": err.code})
        return error_response(err)

    @app.exception_handler(RequestValidationError)
    def _invalid(err: RequestValidationError) -> Response[Any]:
        errors = list(err.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            return error_response(InvalidJson("The body is not valid JSON."))
        details = _validation_details(errors)
        first: dict[str, Any] = details[0] if details else {"loc": [], "msg": "invalid request"}
        return error_response(
            ValidationFailed(ValidationFailed.sentence(first["loc"], first["msg"]), details)
        )

    @app.not_found
    def _no_route(_: Exception) -> Response[Any]:
        return error_response(NotFound("No such route."))

    @app.exception_handler(Exception)
    def _unexpected(err: Exception) -> Response[Any]:
        # the type only: messages and traces may carry user content or secrets
        logger.error("unhandled error", extra={"error_type": type(err).__name__})
        return error_response(SynapseError("Something went wrong on our side."))

    return app


# --- the caller -----------------------------------------------------------------------------


def _authorizer_context(event: dict[str, Any]) -> dict[str, Any] | None:
    ctx = ((event.get("requestContext") or {}).get("authorizer") or {}).get("lambda")
    return ctx if isinstance(ctx, dict) else None


MIND_HEADER = "x-mind-id"


def caller(request: Request) -> Principal:
    """The principal, from the authorizer's context only, acting in the mind the `X-Mind-Id` header
    names (a `Depends` for routes)."""
    event = request.resolved_event.raw_event
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    return Principal.from_context(_authorizer_context(event)).in_mind(headers.get(MIND_HEADER))


def _body_bytes(event: dict[str, Any]) -> bytes:
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        try:
            return base64.b64decode(body)
        except ValueError as exc:
            raise InvalidJson("The body is not valid base64-encoded JSON.") from exc
    return body.encode()


def _precheck(event: dict[str, Any], *, scope: Scope | None, user_only: bool, public: bool) -> None:
    """What must hold before the body is even parsed: size, then who, then JSON.

    Powertools validates the body before any middleware runs, so these checks sit in front of
    the resolver: a caller without rights learns nothing about the body's shape.
    """
    _parsed.set(None)
    raw = _body_bytes(event)
    if len(raw) > MAX_BODY_BYTES:
        raise PayloadTooLarge("The body is larger than 256 KiB.")
    if not public:
        who = Principal.from_context(_authorizer_context(event))
        if user_only:
            who.require_user()
        if scope is not None:
            who.require(scope)
    if raw:
        try:
            # decode first: json.loads(bytes) would also accept UTF-16 and UTF-32, which the
            # resolver then cannot read; the contract's JSON is UTF-8
            text = raw.decode("utf-8")
            value = json.loads(text)
        except (UnicodeDecodeError, ValueError) as exc:
            raise InvalidJson("The body is not valid JSON.") from exc
        # JSON is read whatever the label (curl -d sends form-urlencoded)
        headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
        headers["content-type"] = "application/json"
        event["headers"] = headers
        event["body"], event["isBase64Encoded"] = text, False
        _parsed.set((text, value))


def entrypoint(
    app: APIGatewayHttpResolver,
    *,
    scope: Scope | None = None,
    user_only: bool = False,
    public: bool = False,
) -> Handler:
    """The Lambda handler of a function: observability, pre-checks, then the resolver."""

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
    @tracer.capture_lambda_handler(capture_response=False)
    @metrics.log_metrics(raise_on_empty_metrics=False)
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        if is_metrics_disabled():
            # Powertools never clears a disabled metric set and prints it raw at 100 values
            metrics.clear_metrics()
        metrics.add_metric(name="Requests", unit=MetricUnit.Count, value=1)
        try:
            _precheck(event, scope=scope, user_only=user_only, public=public)
        except SynapseError as err:
            return _raw_error(err)
        return app.resolve(event, context)

    return cast(Handler, handler)
