"""The local run over real HTTP: API Gateway's behaviour, the authorizer, durability, the bus, TTL."""

from __future__ import annotations

import json
import time
import uuid

import requests

from tests.e2e.conftest import LocalServer


def _error(resp: requests.Response) -> dict:
    body = resp.json()
    assert set(body) == {"error"}
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]


# --- on template.yaml ------------------------------------------------------------------------------


def test_health_answers_without_auth(local_server: LocalServer) -> None:
    resp = requests.get(f"{local_server.url}/health", timeout=10)
    assert resp.status_code == 200
    assert resp.json() == {"status": "ok"}


def test_a_protected_route_without_authorization_is_401_in_the_envelope(local_server: LocalServer) -> None:
    resp = requests.get(f"{local_server.url}/memory/recall", params={"q": "x"}, timeout=10)
    assert resp.status_code == 401
    assert _error(resp)["code"] == "unauthorized"


def test_unknown_routes_and_wrong_methods_are_404_in_the_envelope(local_server: LocalServer) -> None:
    for method, path in (("GET", "/nope"), ("PATCH", "/health")):
        resp = requests.request(method, f"{local_server.url}{path}", timeout=10)
        assert resp.status_code == 404
        assert _error(resp)["code"] == "not_found"


def test_the_printed_jwt_and_api_key_authenticate(local_server: LocalServer) -> None:
    # Given the credentials the server printed at start
    assert local_server.jwt
    assert (local_server.data_dir / "local.json").exists()
    # When they call a protected route, Then they are let in
    resp = requests.get(
        f"{local_server.url}/memory/recall", params={"q": "x"}, headers=local_server.headers(), timeout=30
    )
    assert resp.status_code == 200, resp.text
    if local_server.api_key:
        resp = requests.get(
            f"{local_server.url}/memory/recall",
            params={"q": "x"},
            headers=local_server.headers(local_server.api_key),
            timeout=30,
        )
        assert resp.status_code == 200, resp.text


def test_cors_preflight_is_answered_by_the_gateway(local_server: LocalServer) -> None:
    origin = "http://localhost:5173"
    resp = requests.options(
        f"{local_server.url}/memory/recall",
        headers={"Origin": origin, "Access-Control-Request-Method": "GET"},
        timeout=10,
    )
    assert resp.status_code == 204
    assert resp.headers.get("access-control-allow-origin") in ("*", origin)
    assert "authorization" in resp.headers.get("access-control-allow-headers", "").lower()
    health = requests.get(f"{local_server.url}/health", headers={"Origin": origin}, timeout=10)
    assert health.headers.get("access-control-allow-origin") in ("*", origin)


def test_a_bad_token_is_401_in_the_envelope(local_server: LocalServer) -> None:
    resp = requests.get(
        f"{local_server.url}/memory/recall",
        params={"q": "x"},
        headers=local_server.headers("nope"),
        timeout=10,
    )
    assert resp.status_code == 401
    assert _error(resp)["code"] == "unauthorized"


def test_a_memory_survives_a_crash_and_restart(local_server: LocalServer, jwt_for) -> None:
    # Given a memory written by a fresh user
    user = f"dur-{uuid.uuid4().hex[:8]}"
    token = jwt_for(user)
    body = {"category": "preference", "key": "ui_theme", "content": "Prefers dark theme"}
    resp = requests.post(
        f"{local_server.url}/memory", headers=local_server.headers(token), data=json.dumps(body), timeout=30
    )
    assert resp.status_code in (200, 201), resp.text
    # When the server is killed with SIGKILL (no shutdown at all) and started again
    local_server.restart(kill=True)
    # Then the memory is still there, and the printed credentials still work
    resp = requests.get(
        f"{local_server.url}/memory/recall",
        params={"q": "theme"},
        headers=local_server.headers(token),
        timeout=30,
    )
    assert resp.status_code == 200, resp.text
    assert "Prefers dark theme" in resp.text


# --- on the runtime's fixture template -------------------------------------------------------------


def test_the_authorizer_decides_and_its_context_reaches_the_handler(fixture_server: LocalServer) -> None:
    url = fixture_server.url
    resp = requests.get(f"{url}/memory/abc", headers={"Authorization": "Bearer user:bob"}, timeout=10)
    assert resp.status_code == 200
    event = resp.json()["event"]
    assert event["requestContext"]["authorizer"] == {
        "lambda": {"userId": "bob", "kind": "user", "scopes": "memory:read"}
    }
    assert event["pathParameters"] == {"id": "abc"}
    assert resp.json()["function"] == "MemoryGetFunction"
    denied = requests.get(f"{url}/memory/abc", headers={"Authorization": "Bearer deny"}, timeout=10)
    assert (denied.status_code, _error(denied)["code"]) == (403, "forbidden")
    broken = requests.get(f"{url}/memory/abc", headers={"Authorization": "Bearer boom"}, timeout=10)
    assert (broken.status_code, _error(broken)["code"]) == (500, "internal_error")


def test_static_segments_beat_parameters(fixture_server: LocalServer) -> None:
    resp = requests.get(
        f"{fixture_server.url}/memory/recall?q=a&q=b",
        headers={"Authorization": "Bearer user:bob"},
        timeout=10,
    )
    assert resp.json()["function"] == "MemoryRecallTextFunction"
    event = resp.json()["event"]
    assert event["routeKey"] == "GET /memory/recall"
    assert event["queryStringParameters"] == {"q": "a,b"}
    assert resp.cookies.get("a") == "1"


def test_handler_errors_are_500_without_details(fixture_server: LocalServer) -> None:
    resp = requests.get(f"{fixture_server.url}/crash", timeout=10)
    assert resp.status_code == 500
    assert _error(resp)["code"] == "internal_error"
    assert "secret-ish" not in resp.text and "Traceback" not in resp.text


def test_bodies_over_10_mb_are_413(fixture_server: LocalServer) -> None:
    resp = requests.put(
        f"{fixture_server.url}/items/big",
        headers={"Authorization": "Bearer user:bob"},
        data=b"x" * (10 * 1024 * 1024 + 1),
        timeout=30,
    )
    assert resp.status_code == 413
    assert _error(resp)["code"] == "payload_too_large"


def _get_item(server: LocalServer, key: str, kind: str = "item") -> requests.Response:
    return requests.get(
        f"{server.url}/items/{key}",
        params={"kind": kind},
        headers={"Authorization": "Bearer user:bob"},
        timeout=10,
    )


def test_events_reach_their_rule_target_and_writes_survive_sigkill(fixture_server: LocalServer) -> None:
    # Given a write whose handler also publishes SessionSummaryDue on the bus
    key = uuid.uuid4().hex
    resp = requests.put(
        f"{fixture_server.url}/items/{key}",
        headers={"Authorization": "Bearer user:bob"},
        data="ก",
        timeout=10,
    )
    assert resp.status_code == 201
    # Then the rule's target receives the event (it records it in the table)
    deadline = time.monotonic() + 10
    while _get_item(fixture_server, key, "event").status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.1)
    event = json.loads(_get_item(fixture_server, key, "event").json()["value"])
    assert event["source"] == "synapse.memory"
    assert event["detail-type"] == "SessionSummaryDue"
    assert event["detail"] == {"userId": "alice", "sessionId": key, "msgCount": 15}
    # When the server is killed and restarted
    fixture_server.restart(kill=True)
    # Then the item, binary attribute included, is still there
    got = _get_item(fixture_server, key)
    assert got.status_code == 200
    assert got.json() == {"value": "ก", "raw": ("ก".encode() + b"\x00\xff").hex()}


def test_expired_items_are_swept(fixture_server: LocalServer) -> None:
    key = uuid.uuid4().hex
    past = str(int(time.time()) - 5)
    resp = requests.put(
        f"{fixture_server.url}/items/{key}",
        params={"ttl": past},
        headers={"Authorization": "Bearer user:bob"},
        data="old",
        timeout=10,
    )
    assert resp.status_code == 201
    deadline = time.monotonic() + 10
    while _get_item(fixture_server, key).status_code == 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _get_item(fixture_server, key).status_code == 404
