"""The OpenAPI document: what each route can answer (`responses`, for its decorator), and the merged
document of every function as GET /openapi.json serves it (`merge`, `finish_openapi`)."""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Any, Literal, cast

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

from synapse.core.models.base import ErrorEnvelope

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
    bad_request: str | None = None,
    gone: str | None = None,
) -> dict[int, OpenAPIResponse]:
    """Every answer of a route, for its decorator's `responses=`: its 2xx (`ok`, by default 200 with
    the route's return type), and the errors that kind of route can answer, in the envelope.

    access: public (no token), any (any valid token), read / write (the scope a key needs), user (JWTs only).
    body: takes a JSON body (400, 413). params: has parameters or a body to validate (422).
    not_found / conflict / gone: what a 404 / 409 / 410 means on this route, when it can answer one.
    bad_request: what else a 400 means on this route.
    """
    answers: dict[int, OpenAPIResponse] = {}
    for status, answer in (ok or {200: "OK"}).items():
        answers[status] = {"description": answer} if isinstance(answer, str) else answer
    errors: dict[int, str] = {}
    if body:
        errors[400] = _ERRORS[400] + (f"; or {bad_request}" if bad_request else "")
    if access != "public":
        errors[401] = _ERRORS[401]
        errors[403] = _FORBIDDEN[access]
    if not_found:
        errors[404] = f"not_found: {not_found}"
    if conflict:
        errors[409] = f"conflict: {conflict}"
    if gone:
        errors[410] = f"gone: {gone}"
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


# --- the merged document (the docs function) --------------------------------------------------


def merge(app: APIGatewayHttpResolver, functions: Path, *, own: str, **config: Any) -> None:
    """Powertools' OpenAPI merge over the resolver of every function in `functions` (its `app`) but
    the merging function's own (`own`), for `app.get_openapi_merge_schema()` and Swagger UI.

    Powertools discovers a resolver by reading `app = APIGatewayHttpResolver(...)` in a file; the
    functions build theirs with `resolver.resolver()`, so each file is added by name instead."""
    app.configure_openapi_merge(path=str(functions), pattern=[], **config)
    merger = app._openapi_merge  # what configure_openapi_merge made (Powertools has no getter for it)
    for path in sorted(functions.glob("*/app.py")):
        if path.parent.name != own and _builds_a_resolver(path):
            merger.add_file(path, resolver_name="app")


def _builds_a_resolver(path: Path) -> bool:
    """`app = resolver()` at the top of the file (the authorizer and the summarizer have none)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["app"]
            and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", None) == "resolver"
        ):
            return True
    return False
