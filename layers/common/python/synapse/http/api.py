"""HTTP plumbing shared by every function: the resolver's error envelope, the caller, observability.

Each function builds its own `APIGatewayHttpResolver(enable_validation=True)` (so Powertools'
OpenAPI merge can find it), calls `setup(app)`, and exports `handler = entrypoint(app, ...)`.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from enum import Enum
from itertools import accumulate
from typing import Any, Literal, cast

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.event_handler.request import Request
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.utilities.typing import LambdaContext

from synapse.core.errors import (
    InvalidJson,
    NotFound,
    PayloadTooLarge,
    SynapseError,
    UpstreamUnavailable,
    ValidationFailed,
)
from synapse.core.models.base import ErrorEnvelope, Scope
from synapse.core.observability import logger, metrics, tracer
from synapse.core.principal import Principal
from synapse.http import snapstart

__all__ = ["JSON", "caller", "entrypoint", "json_body", "logger", "metrics", "setup", "to_json", "tracer"]

MAX_BODY_BYTES = 256 * 1024
MAX_JSON_DEPTH = 64
JSON = "application/json; charset=utf-8"
Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


snapstart.register()  # SnapStart's runtime hooks (a no-op off Lambda): every HTTP function imports api

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


def validation_details(errors: Any) -> list[dict[str, Any]]:
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
        details = validation_details(errors)
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


# --- the OpenAPI document: what each route can answer ----------------------------------------

Access = Literal["public", "any", "read", "write", "user"]

_ERRORS: dict[int, str] = {
    400: "invalid_json: the body is not JSON (UTF-8, at most 64 levels deep, no NaN or Infinity)",
    401: "unauthorized: no bearer token, or one that is not valid",
    404: "not_found",
    409: "conflict",
    413: "payload_too_large: the body is larger than 256 KiB",
    422: 'validation_error: a parameter or the body breaks a rule; `details` say where ({"loc", "msg"})',
    429: "rate_limited: too many requests; retry later (after Retry-After seconds when it is given)",
    500: "internal_error: something went wrong on the service's side",
    503: "upstream_unavailable: Gemini or AWS is unavailable; retry after Retry-After seconds",
}
_FORBIDDEN: dict[Access, str] = {
    "any": "forbidden: never for a scope (a tool the key's scopes do not allow answers isError)",
    "read": "forbidden: the API key lacks memory:read, or a userId that is not the caller's",
    "write": "forbidden: the API key lacks memory:write, or a userId that is not the caller's",
    "user": "forbidden: for users (JWTs) only; an agent's API key is refused",
}
_RETRY_AFTER: dict[str, Any] = {
    "description": "Seconds to wait before retrying",
    "schema": {"type": "integer", "minimum": 0},
}


def _error(status: int, description: str) -> OpenAPIResponse:
    answer: dict[str, Any] = {
        "description": description,
        "content": {"application/json": {"model": ErrorEnvelope}},
    }
    if status in (429, 503):
        # 503 always carries it (the contract); the local run's 429 does, API Gateway's own does not
        answer["headers"] = {"Retry-After": {**_RETRY_AFTER, "required": status == 503}}
    return cast(OpenAPIResponse, answer)


def no_content(description: str) -> OpenAPIResponse:
    """A 2xx answer without a body (204): no content, so no content type either."""
    return {"description": description, "content": {}}


def responses(
    access: Access,
    ok: Mapping[int, str | OpenAPIResponse] | None = None,
    *,
    body: bool = False,
    params: bool = True,
    not_found: str | None = None,
    conflict: str | None = None,
) -> dict[int, OpenAPIResponse]:
    """Every answer of a route, for its decorator's `responses=`: its 2xx (`ok`, by default 200 with
    the route's return type), and the errors that kind of route can answer, in the envelope.

    access: public (no token), any (any valid token), read / write (the scope a key needs), user (JWTs only).
    body: takes a JSON body (400, 413). params: has parameters or a body to validate (422).
    not_found / conflict: what a 404 / 409 means on this route, when it can answer one.
    """
    answers: dict[int, OpenAPIResponse] = {}
    for status, answer in (ok or {200: "OK"}).items():
        answers[status] = {"description": answer} if isinstance(answer, str) else answer
    errors: dict[int, str] = {}
    if body:
        errors[400] = _ERRORS[400]
    if access != "public":
        errors[401] = _ERRORS[401]
        errors[403] = _FORBIDDEN[access]
    if not_found:
        errors[404] = f"not_found: {not_found}"
    if conflict:
        errors[409] = f"conflict: {conflict}"
    if body:
        errors[413] = _ERRORS[413]
    if params or body:
        errors[422] = _ERRORS[422]
    errors[429] = _ERRORS[429]
    errors[500] = _ERRORS[500]
    if access != "public":  # the authorizer's key lookup and every route behind it use DynamoDB
        errors[503] = _ERRORS[503]
    answers.update({status: _error(status, text) for status, text in errors.items()})
    return answers


def public_operation() -> dict[str, Any]:
    """`openapi_extensions` of a public route: no security requirement (the document's default is
    bearer; Powertools writes a route's own `security` only when it is not empty)."""
    return {"security": []}


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):  # Powertools' ParameterInType in the merged document
        return value.value
    raise TypeError(f"{type(value).__name__} in the OpenAPI document")


def finish_openapi(document: dict[str, Any]) -> dict[str, Any]:
    """The merged document as served: Powertools' own 422 (`HTTPValidationError`, never what this
    service answers) out of the routes that cannot answer 422 (`responses` documents the others in
    the envelope), Powertools' error schemas out, and no empty `content` (a 204 has no body).
    Returns a new document; the merge's cached one is left as is."""
    doc = json.loads(json.dumps(document, default=_plain))
    for path, item in doc.get("paths", {}).items():
        for operation in item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for status, answer in list(operation["responses"].items()):
                if "HTTPValidationError" in json.dumps(answer):
                    del operation["responses"][status]
                elif answer.get("content") == {}:
                    del answer["content"]
            if path.startswith(MIND_ROUTES):
                _in_a_mind(operation)
    schemas = doc.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        if f"#/components/schemas/{name}" not in json.dumps(doc["paths"]):
            schemas.pop(name, None)
    return cast(dict[str, Any], doc)


# every memory and conversation route acts in one mind (X-Mind-Id)
MIND_ROUTES = ("/memory", "/mcp")
_MIND_PARAMETER = {
    "name": "X-Mind-Id",
    "in": "header",
    "required": False,
    "description": (
        "The mind to act in (`default`, or an id from GET /minds); without it, the default mind for a "
        "user and its own mind for a Mind Key. A Mind Key naming another mind is 403; a mind the user "
        "does not have is 404."
    ),
    "schema": {"type": "string", "maxLength": 64},
}


def _in_a_mind(operation: dict[str, Any]) -> None:
    """Document X-Mind-Id on an operation, and the 403 / 404 it can bring."""
    operation.setdefault("parameters", []).append(dict(_MIND_PARAMETER))
    answers = operation["responses"]
    if "403" in answers:
        answers["403"]["description"] += "; or a Mind Key's X-Mind-Id names another mind"
    unknown = "no mind of the caller's has the X-Mind-Id given"
    if "404" in answers:
        answers["404"]["description"] += f"; or {unknown}"
    else:
        answers["404"] = json.loads(json.dumps(answers["401"]))
        answers["404"]["description"] = f"not_found: {unknown}"


# --- the caller -----------------------------------------------------------------------------


def _authorizer_context(event: dict[str, Any]) -> dict[str, Any] | None:
    ctx = ((event.get("requestContext") or {}).get("authorizer") or {}).get("lambda")
    return ctx if isinstance(ctx, dict) else None


MIND_HEADER = "x-mind-id"


def caller(request: Request) -> Principal:
    """The principal, from the authorizer's context only, acting in the mind the `X-Mind-Id` header
    names (a `Depends` for routes)."""
    return caller_of(request.resolved_event.raw_event)


def caller_of(event: dict[str, Any]) -> Principal:
    """`caller` from an API Gateway v2 event itself (the MCP tools read it from the ASGI scope)."""
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


# a JSON string (escapes included), matched without backtracking; what is left outside strings is
# structure, numbers and literals
_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_depth(text: str) -> int:
    """How deeply arrays and objects nest in a JSON text (`[]` and `{"a": 1}` are 1), by a linear scan:
    no recursion, so a body nested 100,000 levels deep costs what its length costs.

    Brackets inside strings do not count. On text that is not JSON the figure means little, and
    json.loads refuses that text anyway."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _not_a_json_number(name: str) -> Any:
    raise InvalidJson(f"The body is not valid JSON: {name} is not a JSON number.")


def parse_json(raw: bytes) -> Any:
    """The body as JSON, as the contract reads it, or InvalidJson: UTF-8 only, at most 64 levels deep,
    and no NaN or Infinity (Python's json module reads them; JSON has no such numbers)."""
    try:
        # decode first: json.loads(bytes) would also accept UTF-16 and UTF-32, which the
        # resolver then cannot read; the contract's JSON is UTF-8
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidJson("The body is not valid JSON.") from exc
    too_deep = InvalidJson(f"The body nests JSON arrays and objects deeper than {MAX_JSON_DEPTH} levels.")
    if json_depth(text) > MAX_JSON_DEPTH:
        raise too_deep
    try:
        return json.loads(text, parse_constant=_not_a_json_number)
    except RecursionError as exc:  # (the scan above makes this unreachable; kept as a guard)
        raise too_deep from exc
    except ValueError as exc:
        raise InvalidJson("The body is not valid JSON.") from exc


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
        value = parse_json(raw)
        text = raw.decode("utf-8")
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
