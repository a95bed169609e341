"""API Gateway HTTP API shapes: payload 2.0 events, REQUEST authorizer events, response translation."""

from __future__ import annotations

import base64
import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from local.template import CorsDef

ACCOUNT_ID = "123456789012"
REGION = "us-east-1"
API_ID = "local"
STAGE = "$default"
MAX_BODY = 10 * 1024 * 1024  # HTTP APIs accept payloads up to 10 MB


@dataclass
class HttpRequest:
    method: str
    raw_path: str
    raw_query: str
    headers: list[tuple[str, str]]
    body: bytes
    source_ip: str = "127.0.0.1"
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    time_epoch_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    host: str = "127.0.0.1"


def _request_time(epoch_ms: int) -> str:
    # API Gateway's requestContext.time: "12/Mar/2020:19:03:58 +0000"
    return datetime.fromtimestamp(epoch_ms / 1000, UTC).strftime("%d/%b/%Y:%H:%M:%S +0000")


def joined_headers(pairs: list[tuple[str, str]]) -> tuple[dict[str, str], list[str]]:
    """Lower-cased header names, repeated headers comma-joined; cookies split out."""
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in pairs:
        key = name.lower()
        if key == "cookie":
            cookies.extend(c.strip() for c in value.split(";") if c.strip())
            continue
        headers[key] = f"{headers[key]},{value}" if key in headers else value
    return headers, cookies


def query_parameters(raw_query: str) -> dict[str, str] | None:
    params: dict[str, str] = {}
    for key, value in parse_qsl(raw_query, keep_blank_values=True):
        params[key] = f"{params[key]},{value}" if key in params else value
    return params or None


def encode_body(body: bytes) -> tuple[str | None, bool]:
    if not body:
        return None, False
    try:
        return body.decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(body).decode("ascii"), True


def _request_context(req: HttpRequest, route_key: str, headers: dict[str, str]) -> dict[str, Any]:
    return {
        "accountId": ACCOUNT_ID,
        "apiId": API_ID,
        "domainName": req.host,
        "domainPrefix": req.host.split(".", 1)[0],
        "http": {
            "method": req.method.upper(),
            "path": req.raw_path,
            "protocol": "HTTP/1.1",
            "sourceIp": req.source_ip,
            "userAgent": headers.get("user-agent", ""),
        },
        "requestId": req.request_id,
        "routeKey": route_key,
        "stage": STAGE,
        "time": _request_time(req.time_epoch_ms),
        "timeEpoch": req.time_epoch_ms,
    }


def http_event(
    req: HttpRequest,
    route_key: str,
    path_parameters: dict[str, str],
    authorizer_context: dict[str, Any] | None,
) -> dict[str, Any]:
    """A payload format 2.0 event, as API Gateway sends it to a Lambda proxy integration."""
    headers, cookies = joined_headers(req.headers)
    body, is_b64 = encode_body(req.body)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": req.raw_path,
        "rawQueryString": req.raw_query,
        "headers": headers,
        "requestContext": _request_context(req, route_key, headers),
        "isBase64Encoded": is_b64,
    }
    if cookies:
        event["cookies"] = cookies
    if (qs := query_parameters(req.raw_query)) is not None:
        event["queryStringParameters"] = qs
    if path_parameters:
        event["pathParameters"] = dict(path_parameters)
    if authorizer_context is not None:
        event["requestContext"]["authorizer"] = {"lambda": authorizer_context}
    if body is not None:
        event["body"] = body
    return event


def authorizer_event(
    req: HttpRequest,
    route_key: str,
    path_parameters: dict[str, str],
    identity_source: list[str],
) -> dict[str, Any]:
    """A REQUEST authorizer event, payload format 2.0."""
    headers, cookies = joined_headers(req.headers)
    method, _, path = route_key.partition(" ")
    event: dict[str, Any] = {
        "version": "2.0",
        "type": "REQUEST",
        "routeArn": f"arn:aws:execute-api:{REGION}:{ACCOUNT_ID}:{API_ID}/{STAGE}/{method}{path}",
        "identitySource": identity_source,
        "routeKey": route_key,
        "rawPath": req.raw_path,
        "rawQueryString": req.raw_query,
        "headers": headers,
        "requestContext": _request_context(req, route_key, headers),
    }
    if cookies:
        event["cookies"] = cookies
    if (qs := query_parameters(req.raw_query)) is not None:
        event["queryStringParameters"] = qs
    if path_parameters:
        event["pathParameters"] = dict(path_parameters)
    return event


def identity_values(req: HttpRequest, header_names: tuple[str, ...]) -> list[str] | None:
    """The identity source's values, or None when one is missing (API Gateway then answers 401)."""
    headers, _ = joined_headers(req.headers)
    values = []
    for name in header_names:
        value = headers.get(name.lower())
        if value is None or value == "":
            return None
        values.append(value)
    return values


@dataclass
class HttpResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def error_response(status: int, code: str, message: str) -> HttpResponse:
    body = json.dumps(
        {"error": {"code": code, "message": message}}, ensure_ascii=False, separators=(",", ":")
    ).encode()
    return HttpResponse(status, [("content-type", "application/json; charset=utf-8")], body)


def cors_origin(allow_origins: tuple[str, ...], origin: str | None) -> str | None:
    """The Access-Control-Allow-Origin value for this Origin, or None when it is not allowed."""
    if not origin:
        return None
    if "*" in allow_origins:
        return "*"
    return origin if origin in allow_origins else None


def preflight_response(cors: CorsDef, origin: str | None) -> HttpResponse:
    """API Gateway answers CORS preflight requests itself when the API has a CORS configuration."""
    allowed = cors_origin(cors.allow_origins, origin)
    headers: list[tuple[str, str]] = []
    if allowed is not None:
        headers.append(("access-control-allow-origin", allowed))
        if cors.allow_methods:
            headers.append(("access-control-allow-methods", ",".join(cors.allow_methods)))
        if cors.allow_headers:
            headers.append(("access-control-allow-headers", ",".join(cors.allow_headers).lower()))
        if cors.max_age is not None:
            headers.append(("access-control-max-age", str(cors.max_age)))
        if cors.allow_credentials:
            headers.append(("access-control-allow-credentials", "true"))
    return HttpResponse(204, headers, b"")


def add_cors(resp: HttpResponse, cors: CorsDef, origin: str | None) -> HttpResponse:
    """API Gateway's CORS headers replace whatever the integration sent."""
    allowed = cors_origin(cors.allow_origins, origin)
    if allowed is None:
        return resp
    headers = [(n, v) for n, v in resp.headers if not n.lower().startswith("access-control-")]
    headers.append(("access-control-allow-origin", allowed))
    if cors.expose_headers:
        headers.append(("access-control-expose-headers", ",".join(cors.expose_headers).lower()))
    if cors.allow_credentials:
        headers.append(("access-control-allow-credentials", "true"))
    return HttpResponse(resp.status, headers, resp.body)


def translate_response(result: Any) -> HttpResponse:
    """A Lambda result → HTTP answer, with payload 2.0's inference for results without statusCode."""
    if isinstance(result, dict) and "statusCode" in result:
        status = int(result["statusCode"])
        headers: list[tuple[str, str]] = []
        for name, value in (result.get("headers") or {}).items():
            headers.append((str(name), str(value)))
        for name, values in (result.get("multiValueHeaders") or {}).items():
            headers.extend((str(name), str(v)) for v in values)
        headers.extend(("set-cookie", str(c)) for c in result.get("cookies") or [])
        raw = result.get("body")
        if raw is None:
            body = b""
        elif result.get("isBase64Encoded"):
            body = base64.b64decode(raw)
        else:
            body = str(raw).encode("utf-8")
        if not any(n.lower() == "content-type" for n, _ in headers) and body:
            headers.append(("content-type", "application/json"))
        return HttpResponse(status, headers, body)
    # no statusCode: 200, application/json, the result itself is the body
    body = json.dumps(result).encode("utf-8") if result is not None else b""
    return HttpResponse(200, [("content-type", "application/json")], body)
