"""Every route × every way of being the wrong caller → 401/403 in the envelope, and nothing written.

Each request goes through the authorizer (functions/authorizer) and then the route's own handler, the
way API Gateway chains them: the authorizer's context becomes `requestContext.authorizer.lambda`.
The route list is read from template.yaml, so a new route without a row here fails the test.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends

from harness.lambdas import ALICE, LambdaContext, agent, load_function, sample_event, template
from synapse.core.config import settings
from synapse.services.account import auth
from tests.conftest import IDEMPOTENCY, TABLE, Call

SECRET = "test-secret-that-is-long-enough-for-hs256"
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
ISSUER = "https://project.supabase.co/auth/v1"
AUDIENCE = "authenticated"
STATUS_CODES = {401: "unauthorized", 403: "forbidden"}


@dataclass(frozen=True)
class Route:
    """One row of the matrix: how to call the route validly, and what it needs."""

    function: str
    needs: str  # "read" | "write" | "user" (user only) | "any" (any valid token) | "public"
    body: dict[str, Any] | None = None
    query: dict[str, str] | None = None
    path_params: dict[str, str] = field(default_factory=dict)
    user_id_in: str | None = None  # "body" | "path": where a userId can be named
    ok: int = 200


# {id}, {keyId} are filled in from the fixture's own data (the caller's own, existing objects)
ROUTES: dict[str, Route] = {
    "GET /health": Route("health", "public"),
    "GET /openapi.json": Route("docs", "public"),
    "GET /docs": Route("docs", "public"),
    "GET /console": Route("console", "public"),
    "GET /console/{asset}": Route("console", "public", path_params={"asset": "app.js"}),
    "POST /memory": Route(
        "memory_create",
        "write",
        body={"category": "fact", "key": "new_fact", "content": "A brand new fact"},
        user_id_in="body",
        ok=201,
    ),
    "POST /memory/batch": Route(
        "memory_batch",
        "write",
        body={"memories": [{"category": "fact", "key": "batched_fact", "content": "A batched fact"}]},
    ),
    "POST /memory/import": Route(
        "memory_import",
        "write",
        body={"format": "mem0", "records": [{"id": "m-1", "memory": "Likes tea", "categories": ["food"]}]},
    ),
    "GET /memory": Route("memory_list", "read", query={"limit": "10"}),
    "GET /memory/{id}": Route("memory_get", "read", path_params={"id": "{id}"}),
    # alice's memory is verified (she wrote it): an agent's change of it is a proposal (Review), 202
    "PUT /memory/{id}": Route(
        "memory_update",
        "write",
        body={"content": "changed by somebody"},
        path_params={"id": "{id}"},
        user_id_in="body",
        ok=202,
    ),
    "DELETE /memory/{id}": Route("memory_delete", "write", path_params={"id": "{id}"}, ok=202),
    "POST /memory/{id}/verify": Route("memory_verify", "user", path_params={"id": "{id}"}),
    "GET /memory/{id}/history": Route("memory_history", "read", path_params={"id": "{id}"}),
    "POST /minds": Route("minds_create", "user", body={"name": "another mind"}, ok=201),
    "GET /minds": Route("minds_list", "user"),
    "DELETE /minds/{mindId}": Route("minds_delete", "user", path_params={"mindId": "m_0123456789ab"}, ok=404),
    "PATCH /minds/{mindId}": Route(
        "minds_update", "user", body={"timezone": "Asia/Bangkok"}, path_params={"mindId": "default"}
    ),
    "POST /minds/{mindId}/consolidate": Route("minds_consolidate", "user", path_params={"mindId": "default"}),
    "POST /memory/{id}/restore": Route(
        "memory_restore", "write", body={"version": 1}, path_params={"id": "{id}"}, ok=202
    ),
    "GET /memory/proposals": Route("memory_proposals", "user", query={"limit": "10"}),
    "POST /memory/proposals/{proposalId}/accept": Route(
        "proposal_accept",
        "user",
        body={"content": "The launch codes are 1234"},
        path_params={"proposalId": "{proposalId}"},
    ),
    "POST /memory/proposals/{proposalId}/decline": Route(
        "proposal_decline", "user", path_params={"proposalId": "{proposalId}"}, ok=204
    ),
    "GET /memory/recall": Route("memory_recall_text", "read"),
    "GET /memory/by-tag": Route("memory_by_tag", "read", query={"tag": "secret"}),
    "GET /memory/search": Route("memory_search", "read", query={"q": "launch"}),
    "GET /memory/expiring": Route("memory_expiring", "read", query={"within": "30d"}),
    "GET /memory/changes": Route("memory_changes", "read", query={"after": "0"}),
    "GET /memory/timeline": Route("memory_timeline", "read", query={"limit": "10"}),
    "POST /memory/ingest": Route(
        "memory_ingest",
        "write",
        body={
            "sessionId": "s2",
            "messages": [{"role": "user", "content": "I moved to Lisbon last spring for the new job"}],
        },
        user_id_in="body",
    ),
    "POST /memory/recall": Route("memory_recall", "read", body={"query": "launch codes"}, user_id_in="body"),
    "POST /memory/context": Route(
        "memory_context", "read", body={"query": "launch codes", "sessionId": "s1"}, user_id_in="body"
    ),
    "POST /memory/summarize": Route(
        "memory_summarize",
        "write",
        body={"sessionId": "s1", "messages": [{"role": "user", "content": "We agreed to launch on Monday"}]},
        user_id_in="body",
    ),
    "GET /memory/identity/{userId}": Route(
        "memory_identity", "read", path_params={"userId": "alice"}, user_id_in="path"
    ),
    "GET /memory/summaries/{sessionId}": Route("memory_summaries", "read", path_params={"sessionId": "s1"}),
    "POST /keys": Route("keys_create", "user", body={"name": "another", "scopes": ["memory:read"]}, ok=201),
    "GET /keys": Route("keys_list", "user"),
    "DELETE /keys/{keyId}": Route("keys_delete", "user", path_params={"keyId": "{keyId}"}, ok=204),
    "PUT /providers/{provider}": Route(
        "providers_put",
        "user",
        body={"api_key": "AIzaSyD-another-key-0123456789abCd"},
        path_params={"provider": "gemini"},
    ),
    "GET /providers": Route("providers_list", "user"),
    "DELETE /providers/{provider}": Route(
        "providers_delete", "user", path_params={"provider": "gemini"}, ok=204
    ),
    # (a tool a key's scopes do not allow is a tool result with isError: tests/integration/test_mcp.py)
    "POST /mcp": Route("mcp", "any", body={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    "GET /me/export": Route("me_export", "user"),
    "POST /me/exports": Route("me_exports_create", "user", ok=202),
    "GET /me/exports/{exportId}": Route("me_exports_get", "user", path_params={"exportId": "{exportId}"}),
    "DELETE /me": Route("me_delete", "user"),
    # a literal public address: registering resolves nothing (tests never reach the network)
    "POST /webhooks": Route("webhooks_create", "user", body={"url": "https://93.184.215.14/hook"}, ok=201),
    "GET /webhooks": Route("webhooks_list", "user"),
    "DELETE /webhooks/{webhookId}": Route(
        "webhooks_delete", "user", path_params={"webhookId": "{webhookId}"}, ok=204
    ),
    "POST /webhooks/{webhookId}/test": Route(
        "webhooks_test", "user", path_params={"webhookId": "{webhookId}"}, ok=202
    ),
    "GET /webhooks/{webhookId}/deliveries": Route(
        "webhooks_deliveries", "user", path_params={"webhookId": "{webhookId}"}
    ),
}


def template_routes() -> dict[str, tuple[str, bool]]:
    """'METHOD /path' → (function directory, public) for every HttpApi event in template.yaml."""
    routes = {}
    for resource in template()["Resources"].values():
        props = resource.get("Properties") or {}
        for event in (props.get("Events") or {}).values():
            if event.get("Type") != "HttpApi":
                continue
            ev = event["Properties"]
            code = props["CodeUri"].rstrip("/")
            handler_dir = props["Handler"].split("/")[0] if "/" in props["Handler"] else ""
            directory = handler_dir or code.split("/")[-1]
            public = (ev.get("Auth") or {}).get("Authorizer") == "NONE"
            routes[f"{ev['Method'].upper()} {ev['Path']}"] = (directory, public)
    return routes


def test_the_matrix_covers_every_route_of_the_template() -> None:
    found = template_routes()
    assert set(found) == set(ROUTES), "a route is missing from the matrix (or from the template)"
    for key, (directory, public) in found.items():
        assert ROUTES[key].function == directory, key
        assert (ROUTES[key].needs == "public") == public, key


# --- tokens -------------------------------------------------------------------------------------


def hs256(sub: str = "alice", secret: str = SECRET, **extra: Any) -> str:
    return jwt.encode({"sub": sub, "exp": int(time.time()) + 300, **extra}, secret, algorithm="HS256")


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def alg_none(sub: str = "alice") -> str:
    header = b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    payload = b64(json.dumps({"sub": sub, "exp": int(time.time()) + 300}).encode())
    return f"{header}.{payload}."


def hs256_with_public_key(sub: str = "alice") -> str:
    """The algorithm-confusion attack: HMAC keyed with the JWKS's public RSA key."""
    pem = RSA_KEY.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "rsa1"}).encode())
    payload = b64(json.dumps({"sub": sub, "exp": int(time.time()) + 300}).encode())
    signature = b64(hmac.new(pem, f"{header}.{payload}".encode(), hashlib.sha256).digest())
    return f"{header}.{payload}.{signature}"


@pytest.fixture
def jwks_url() -> Iterator[str]:
    """A JWKS endpoint on loopback (like Supabase's), publishing RSA_KEY's public half."""
    jwk = {**json.loads(RSAAlgorithm.to_jwk(RSA_KEY.public_key())), "kid": "rsa1", "use": "sig"}
    body = json.dumps({"keys": [jwk]}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # (polled every 50 ms, not serve_forever's 0.5 s: shutdown() waits for the next poll)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    auth._jwks_client.cache_clear()
    yield f"http://127.0.0.1:{server.server_port}/auth/v1/.well-known/jwks.json"
    server.shutdown()
    server.server_close()
    auth._jwks_client.cache_clear()


# --- the gateway --------------------------------------------------------------------------------


@dataclass
class World:
    """Alice's existing data and keys, created before any bad caller shows up."""

    memory_id: str
    spare_key_id: str
    keys: dict[str, str]  # "read", "write", "full", "revoked" → plain key
    proposal_id: str = ""
    webhook_id: str = ""
    export_id: str = ""


def fill(route: Route, world: World) -> dict[str, str]:
    return {
        k: v.replace("{id}", world.memory_id)
        .replace("{keyId}", world.spare_key_id)
        .replace("{proposalId}", world.proposal_id)
        .replace("{webhookId}", world.webhook_id)
        .replace("{exportId}", world.export_id)
        for k, v in route.path_params.items()
    }


class Gateway:
    """Authorizer, then handler, as API Gateway runs them."""

    def __init__(self, call: Call) -> None:
        self.call = call
        self.authorizer = load_function("authorizer")

    def authorize(self, route_key: str, authorization: str | None) -> dict[str, Any]:
        event = sample_event("authorizer")
        event["routeKey"] = route_key
        event["headers"] = {"authorization": authorization} if authorization is not None else {}
        event["identitySource"] = [authorization] if authorization is not None else []
        result: dict[str, Any] = self.authorizer.handler(event, LambdaContext())
        return result

    def send(
        self,
        route_key: str,
        route: Route,
        world: World,
        authorization: str | None,
        *,
        body: dict[str, Any] | None = None,
        path_params: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        method, template_path = route_key.split(" ", 1)
        params = fill(route, world)
        params.update(path_params or {})
        path = template_path
        for name, value in params.items():
            path = path.replace("{" + name + "}", value)
        who: dict[str, Any] | None = None
        if route.needs != "public":
            decision = self.authorize(route_key, authorization)
            if decision.get("isAuthorized") is not True:  # API Gateway's own answer
                return {"statusCode": 403, "json": {"error": {"code": "forbidden", "message": "denied"}}}
            who = decision.get("context") or {}
        return self.call(
            route.function,
            method,
            path,
            body=body if body is not None else route.body,
            query=route.query,
            who=who,
            route=template_path,
            path_params=params or None,
            headers={"authorization": authorization} if authorization else None,
        )


@pytest.fixture
def world(call: Call) -> World:
    # Given alice has a memory, a session and API keys of each kind (one revoked)
    created = call(
        "memory_create",
        "POST",
        "/memory",
        body={
            "category": "project",
            "key": "launch",
            "content": "The launch codes are 0000",
            "tags": ["secret"],
        },
        who=ALICE,
    )
    assert created["statusCode"] == 201, created
    ingested = call(
        "memory_ingest",
        "POST",
        "/memory/ingest",
        body={"sessionId": "s1", "messages": [{"role": "user", "content": "We plan the launch for Monday"}]},
        who=ALICE,
    )
    assert ingested["statusCode"] == 200, ingested
    keys = {}
    for name, scopes in [
        ("read", ["memory:read"]),
        ("write", ["memory:write"]),
        ("full", ["memory:read", "memory:write"]),
        ("revoked", ["memory:read", "memory:write"]),
        ("spare", ["memory:read"]),
    ]:
        record, plain = auth.issue_api_key("alice", name, scopes)
        keys[name] = plain
        if name == "revoked":
            revoked_id = record.key_id
        if name == "spare":
            spare_id = record.key_id
    gone = call(
        "keys_delete",
        "DELETE",
        f"/keys/{revoked_id}",
        route="/keys/{keyId}",
        path_params={"keyId": revoked_id},
        who=ALICE,
    )
    assert gone["statusCode"] == 204
    # and an agent proposed a change of her (verified) memory
    mem_id = created["json"]["id"]
    proposed = call(
        "memory_update",
        "PUT",
        f"/memory/{mem_id}",
        route="/memory/{id}",
        path_params={"id": mem_id},
        body={"content": "The launch codes are 9999"},
        who=agent(),
    )
    assert proposed["statusCode"] == 202, proposed
    # and she registered a webhook
    hook = call(
        "webhooks_create", "POST", "/webhooks", body={"url": "https://93.184.215.14/alice"}, who=ALICE
    )
    assert hook["statusCode"] == 201, hook
    export = call("me_exports_create", "POST", "/me/exports", who=ALICE)
    assert export["statusCode"] == 202, export
    return World(
        memory_id=mem_id,
        spare_key_id=spare_id,
        keys=keys,
        proposal_id=proposed["json"]["proposal"]["proposal_id"],
        webhook_id=hook["json"]["webhook_id"],
        export_id=export["json"]["export_id"],
    )


def put_provider_key(call: Call) -> None:
    answer = call(
        "providers_put",
        "PUT",
        "/providers/gemini",
        route="/providers/{provider}",
        path_params={"provider": "gemini"},
        body={"api_key": "AIzaSyD-own-user-key-0123456789xYz"},
        who=ALICE,
    )
    assert answer["statusCode"] == 200, answer


def snapshot(aws: Any) -> list[Any]:
    """Every item of both tables, in a stable order: what 'nothing written' is compared against.

    Read from moto's own store (what a Scan answers, without its serialising and parsing: the test
    takes ~530 snapshots, which through Scan were about half of its time)."""
    backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][aws.meta.region_name]
    items = []
    for table in (TABLE, IDEMPOTENCY):
        for item in backend.get_table(table).all_items():
            items.append(json.dumps(item.to_json()["Attributes"], sort_keys=True, default=str))
    return sorted(items)


def assert_refused(answer: dict[str, Any], status: int, label: str) -> None:
    assert answer["statusCode"] == status, (label, answer.get("statusCode"), answer.get("body"))
    body = answer["json"]
    assert set(body) == {"error"}, (label, body)
    error = body["error"]
    assert error["code"] == STATUS_CODES[status], (label, error)
    assert isinstance(error["message"], str) and error["message"].strip(), (label, error)
    # "one human sentence": a capital first, a full stop (or a question mark) last
    assert error["message"][0].isupper() and error["message"][-1] in ".?", (label, error)
    assert set(error) <= {"code", "message", "details"}, (label, error)


# --- the bad callers ----------------------------------------------------------------------------

Case = Callable[[pytest.MonkeyPatch, World, str], str | None]


def _env(mp: pytest.MonkeyPatch, **values: str | None) -> None:
    for name, value in values.items():
        if value is None:
            mp.delenv(name, raising=False)
        else:
            mp.setenv(name, value)
    settings.cache_clear()


BAD_TOKENS: dict[str, Case] = {
    "no token": lambda mp, w, url: None,
    "empty bearer": lambda mp, w, url: "Bearer ",
    "not bearer": lambda mp, w, url: "Basic YWxpY2U6cGFzc3dvcmQ=",
    "bad token": lambda mp, w, url: "Bearer not.a.jwt",
    "forged signature": lambda mp, w, url: f"Bearer {hs256(secret='another-secret-another-secret-xx')}",
    "expired JWT": lambda mp, w, url: f"Bearer {hs256(exp=int(time.time()) - 3600)}",
    "JWT without exp": lambda mp, w, url: "Bearer " + jwt.encode({"sub": "alice"}, SECRET, algorithm="HS256"),
    "wrong audience": lambda mp, w, url: (
        _env(mp, JWT_AUDIENCE=AUDIENCE) or f"Bearer {hs256(aud='another-app')}"
    ),
    "no audience when one is required": lambda mp, w, url: (
        _env(mp, JWT_AUDIENCE=AUDIENCE) or f"Bearer {hs256()}"
    ),
    "wrong issuer": lambda mp, w, url: (
        _env(mp, JWT_ISSUER=ISSUER) or f"Bearer {hs256(iss='https://evil.example/auth/v1')}"
    ),
    "alg none": lambda mp, w, url: f"Bearer {alg_none()}",
    "HS256 signed with the JWKS public key": lambda mp, w, url: (
        _env(mp, JWT_SECRET=None, JWT_JWKS_URL=url) or f"Bearer {hs256_with_public_key()}"
    ),
    "revoked API key": lambda mp, w, url: f"Bearer {w.keys['revoked']}",
    "unknown API key": lambda mp, w, url: "Bearer gts_live_" + "A" * 43,
    "malformed API key": lambda mp, w, url: "Bearer gts_live_short",
}


def wrong_scope(route: Route, world: World) -> str | None:
    """A key of alice's that lacks what the route needs (None when no such key exists)."""
    return {"read": world.keys["write"], "write": world.keys["read"]}.get(route.needs)


@pytest.mark.parametrize("route_key", sorted(k for k, r in ROUTES.items() if r.needs != "public"))
def test_every_bad_caller_is_refused_and_writes_nothing(
    route_key: str,
    call: Call,
    aws: Any,
    world: World,
    jwks_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    route = ROUTES[route_key]
    gateway = Gateway(call)
    if route.function.startswith("providers"):  # (elsewhere it would send alice's Gemini calls out)
        put_provider_key(call)
    before = snapshot(aws)

    # When a caller without a valid principal calls: 401, nothing written
    for label, make in BAD_TOKENS.items():
        with monkeypatch.context() as mp:
            authorization = make(mp, world, jwks_url)
            answer = gateway.send(route_key, route, world, authorization)
        settings.cache_clear()
        assert_refused(answer, 401, label)
        assert snapshot(aws) == before, f"{label}: something was written"

    # When alice's key lacks the route's scope: 403
    key = wrong_scope(route, world)
    if key is not None:
        assert_refused(gateway.send(route_key, route, world, f"Bearer {key}"), 403, "missing scope")
        assert snapshot(aws) == before, "missing scope: something was written"

    # When an agent (a key with every scope) calls a user-only route: 403
    if route.needs == "user":
        answer = gateway.send(route_key, route, world, f"Bearer {world.keys['full']}")
        assert_refused(answer, 403, "agent on a user-only route")
        assert snapshot(aws) == before, "agent on a user-only route: something was written"

    # When a valid caller names somebody else's userId (a user and an agent alike): 403
    if route.user_id_in is not None:
        for label, token in [("user", hs256()), ("agent", world.keys["full"])]:
            if route.user_id_in == "body":
                answer = gateway.send(
                    route_key, route, world, f"Bearer {token}", body={**(route.body or {}), "userId": "bob"}
                )
            else:
                answer = gateway.send(
                    route_key, route, world, f"Bearer {token}", path_params={"userId": "bob"}
                )
            assert_refused(answer, 403, f"{label} naming bob")
            assert snapshot(aws) == before, f"{label} naming bob: something was written"

    # Then (the control) the very same request from the right caller succeeds: an agent whose key
    # has exactly the needed scope, or alice herself on a user-only route
    needed = {"read": "read", "write": "write"}.get(route.needs)
    token = world.keys[needed] if needed else hs256()
    answer = gateway.send(route_key, route, world, f"Bearer {token}")
    assert answer["statusCode"] == route.ok, ("the right caller", answer.get("body"))


@pytest.mark.parametrize("route_key", sorted(k for k, r in ROUTES.items() if r.needs == "public"))
def test_public_routes_answer_without_a_token(route_key: str, call: Call, world: World) -> None:
    answer = Gateway(call).send(route_key, ROUTES[route_key], world, None)
    assert answer["statusCode"] == 200


def test_the_jwks_and_claim_checks_accept_the_right_tokens(
    jwks_url: str, aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The controls of the JWKS, issuer and audience cases: a correct token of each kind gets through."""
    authorizer = load_function("authorizer")

    def decide(token: str) -> dict[str, Any]:
        event = sample_event("authorizer")
        event["headers"] = {"authorization": f"Bearer {token}"}
        result: dict[str, Any] = authorizer.handler(event, LambdaContext())["context"]
        return result

    _env(monkeypatch, JWT_SECRET=None, JWT_JWKS_URL=jwks_url)
    rs256 = jwt.encode(
        {"sub": "alice", "exp": int(time.time()) + 300}, RSA_KEY, algorithm="RS256", headers={"kid": "rsa1"}
    )
    assert decide(rs256)["userId"] == "alice"
    _env(monkeypatch, JWT_SECRET=SECRET, JWT_JWKS_URL=None, JWT_ISSUER=ISSUER, JWT_AUDIENCE=AUDIENCE)
    assert decide(hs256(iss=ISSUER, aud=AUDIENCE))["userId"] == "alice"
    settings.cache_clear()


def test_another_users_memory_id_is_not_found_and_untouched(call: Call, aws: Any, world: World) -> None:
    # Given alice's memory; When bob (and bob's agent) address it by id: 404 everywhere, nothing changes
    before = snapshot(aws)
    gateway = Gateway(call)
    bob_key = auth.issue_api_key("bob", "bob agent", ["memory:read", "memory:write"])[1]
    after_key = snapshot(aws)
    for token in (hs256("bob"), bob_key):
        for route_key in [
            "GET /memory/{id}",
            "PUT /memory/{id}",
            "DELETE /memory/{id}",
            "POST /memory/{id}/verify",
        ]:
            answer = gateway.send(route_key, ROUTES[route_key], world, f"Bearer {token}")
            expected = 403 if (token == bob_key and ROUTES[route_key].needs == "user") else 404
            assert answer["statusCode"] == expected, (route_key, answer.get("body"))
            assert answer["json"]["error"]["code"] == {403: "forbidden", 404: "not_found"}[expected]
        # and alice's key id cannot be revoked by bob
        answer = gateway.send(
            "DELETE /keys/{keyId}", ROUTES["DELETE /keys/{keyId}"], world, f"Bearer {token}"
        )
        assert answer["statusCode"] in (403, 404)
    assert snapshot(aws) == after_key
    assert len(after_key) == len(before) + 2  # bob's key: lookup + listing items
