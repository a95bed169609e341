"""API Gateway HTTP API shapes built by the local run: payload 2.0 events and responses."""

from __future__ import annotations

import base64
import json

from local import apigw
from local.template import CorsDef
from local.worker import LambdaContext


def _req(**kw) -> apigw.HttpRequest:
    base = {
        "method": "POST",
        "raw_path": "/memory/a%2Fb",
        "raw_query": "q=x&q=y&empty=",
        "headers": [
            ("Authorization", "Bearer t"),
            ("X-Multi", "1"),
            ("x-multi", "2"),
            ("Cookie", "a=1; b=2"),
            ("User-Agent", "ua/1"),
        ],
        "body": b'{"k": "\xe0\xb8\x81"}',
        "request_id": "req-1",
        "time_epoch_ms": 1_700_000_000_000,
    }
    base.update(kw)
    return apigw.HttpRequest(**base)


def test_payload_v2_event_has_api_gateways_shape() -> None:
    event = apigw.http_event(_req(), "POST /memory/{id}", {"id": "a/b"}, {"userId": "alice"})
    assert event["version"] == "2.0"
    assert event["routeKey"] == "POST /memory/{id}"
    assert event["rawPath"] == "/memory/a%2Fb"
    assert event["rawQueryString"] == "q=x&q=y&empty="
    assert event["headers"]["x-multi"] == "1,2"
    assert event["headers"]["authorization"] == "Bearer t"
    assert "cookie" not in event["headers"]
    assert event["cookies"] == ["a=1", "b=2"]
    assert event["queryStringParameters"] == {"q": "x,y", "empty": ""}
    assert event["pathParameters"] == {"id": "a/b"}
    assert event["isBase64Encoded"] is False
    assert json.loads(event["body"]) == {"k": "ก"}
    ctx = event["requestContext"]
    assert ctx["http"] == {
        "method": "POST",
        "path": "/memory/a%2Fb",
        "protocol": "HTTP/1.1",
        "sourceIp": "127.0.0.1",
        "userAgent": "ua/1",
    }
    assert ctx["stage"] == "$default"
    assert ctx["routeKey"] == "POST /memory/{id}"
    assert ctx["requestId"] == "req-1"
    assert ctx["timeEpoch"] == 1_700_000_000_000
    assert ctx["time"] == "14/Nov/2023:22:13:20 +0000"
    assert ctx["authorizer"] == {"lambda": {"userId": "alice"}}


def test_binary_bodies_are_base64_and_empty_parts_are_left_out() -> None:
    event = apigw.http_event(_req(body=b"\xff\x00", raw_query="", headers=[]), "POST /x", {}, None)
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == b"\xff\x00"
    for absent in ("queryStringParameters", "pathParameters", "cookies"):
        assert absent not in event
    assert "authorizer" not in event["requestContext"]
    assert "body" not in apigw.http_event(_req(body=b""), "POST /x", {}, None)


def test_authorizer_event_is_a_v2_request_event() -> None:
    event = apigw.authorizer_event(_req(), "POST /memory/{id}", {"id": "a/b"}, ["Bearer t"])
    assert event["type"] == "REQUEST"
    assert event["version"] == "2.0"
    assert event["identitySource"] == ["Bearer t"]
    assert event["routeArn"].endswith("/$default/POST/memory/{id}")
    assert event["routeKey"] == "POST /memory/{id}"
    assert event["pathParameters"] == {"id": "a/b"}
    assert event["headers"]["authorization"] == "Bearer t"


def test_identity_source_missing_means_no_values() -> None:
    assert apigw.identity_values(_req(headers=[]), ("Authorization",)) is None
    assert apigw.identity_values(_req(headers=[("authorization", "")]), ("Authorization",)) is None
    assert apigw.identity_values(_req(), ("Authorization",)) == ["Bearer t"]


def test_v2_responses_translate_with_cookies_and_base64() -> None:
    resp = apigw.translate_response(
        {
            "statusCode": 201,
            "headers": {"Content-Type": "text/plain"},
            "cookies": ["a=1"],
            "body": base64.b64encode(b"\x01\x02").decode(),
            "isBase64Encoded": True,
        }
    )
    assert resp.status == 201
    assert resp.body == b"\x01\x02"
    assert ("set-cookie", "a=1") in resp.headers
    assert ("Content-Type", "text/plain") in resp.headers


def test_results_without_status_code_are_inferred_as_json_200() -> None:
    resp = apigw.translate_response({"hello": "world"})
    assert (resp.status, json.loads(resp.body)) == (200, {"hello": "world"})
    assert ("content-type", "application/json") in resp.headers
    assert apigw.translate_response("hi").body == b'"hi"'
    assert apigw.translate_response({"statusCode": 204}).body == b""


def test_error_envelope() -> None:
    resp = apigw.error_response(404, "not_found", "No route.")
    assert resp.status == 404
    assert json.loads(resp.body) == {"error": {"code": "not_found", "message": "No route."}}


def test_lambda_context_counts_down() -> None:
    ctx = LambdaContext("Fn", 1024, 29, "rid")
    assert ctx.function_name == "Fn"
    assert ctx.aws_request_id == "rid"
    assert ctx.invoked_function_arn.endswith(":function:Fn")
    assert 28_000 < ctx.get_remaining_time_in_millis() <= 29_000


CORS = CorsDef(
    allow_origins=("https://app.example.com",),
    allow_headers=("Authorization", "Content-Type"),
    allow_methods=("GET", "POST"),
    expose_headers=("Retry-After",),
    max_age=600,
    allow_credentials=False,
)


def test_cors_preflight_and_response_headers_like_api_gateway() -> None:
    pre = apigw.preflight_response(CORS, "https://app.example.com")
    assert pre.status == 204
    assert dict(pre.headers) == {
        "access-control-allow-origin": "https://app.example.com",
        "access-control-allow-methods": "GET,POST",
        "access-control-allow-headers": "authorization,content-type",
        "access-control-max-age": "600",
    }
    assert apigw.preflight_response(CORS, "https://evil.example").headers == []
    resp = apigw.add_cors(
        apigw.HttpResponse(200, [("access-control-allow-origin", "x")], b"{}"),
        CORS,
        "https://app.example.com",
    )
    assert dict(resp.headers) == {
        "access-control-allow-origin": "https://app.example.com",
        "access-control-expose-headers": "retry-after",
    }
    assert apigw.cors_origin(("*",), "https://any.example") == "*"
    assert apigw.cors_origin(("*",), None) is None
