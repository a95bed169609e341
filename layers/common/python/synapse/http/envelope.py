"""Every failure as the contract's error envelope, and JSON as the service writes it."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import Response

from synapse.core.errors import InvalidJson, SynapseError, UpstreamUnavailable, ValidationFailed

JSON = "application/json; charset=utf-8"


def to_json(value: Any) -> str:
    """Compact UTF-8 JSON: Thai stays readable (and a third of the bytes of \\u escapes)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def envelope(err: SynapseError) -> dict[str, Any]:
    body: dict[str, Any] = {"code": err.code, "message": err.message}
    if err.details:
        body["details"] = err.details
    return {"error": body}


def headers(err: SynapseError) -> dict[str, str]:
    out = {"Content-Type": JSON}
    if isinstance(err, UpstreamUnavailable):
        out["Retry-After"] = str(err.retry_after)
    return out


def error_response(err: SynapseError) -> Response[Any]:
    """The answer of a route (inside the resolver)."""
    return Response(status_code=err.status, headers=headers(err), body=to_json(envelope(err)))


def raw_error(err: SynapseError) -> dict[str, Any]:
    """An API Gateway v2 answer built before the resolver runs (auth, size, JSON)."""
    return {
        "statusCode": err.status,
        "headers": headers(err),
        "body": to_json(envelope(err)),
        "isBase64Encoded": False,
    }


def validation_details(errors: Any) -> list[dict[str, Any]]:
    """pydantic's errors as the envelope's `details`: where (`loc`) and what (`msg`), nothing else
    (no input echoed back, no links)."""
    details = []
    for e in errors:
        loc = [p if isinstance(p, int) else str(p) for p in e.get("loc", ())]
        msg = str(e.get("msg", "invalid value"))
        # pydantic prefixes the text of a ValueError raised by our validators with "Value error, "
        details.append({"loc": loc, "msg": msg.removeprefix("Value error, ")})
    return details


def invalid(errors: Any) -> SynapseError:
    """What a failed validation of a request answers: 422 with every problem in `details`, the first
    one in the sentence (400 if pydantic found the JSON itself broken)."""
    errors = list(errors)
    if any(e.get("type") == "json_invalid" for e in errors):
        return InvalidJson("The body is not valid JSON.")
    details = validation_details(errors)
    first: dict[str, Any] = details[0] if details else {"loc": [], "msg": "invalid request"}
    return ValidationFailed(ValidationFailed.sentence(first["loc"], first["msg"]), details)
