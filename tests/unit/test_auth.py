"""JWT verification: HS256, JWKS (RS256/ES256), claims, refused algorithms; principals and scopes."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from synapse.core.config import settings
from synapse.core.errors import Forbidden, Unauthorized
from synapse.core.models.base import Scope
from synapse.services.account import auth

SECRET = "test-secret-that-is-long-enough-for-hs256"
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def claims(**extra: Any) -> dict[str, Any]:
    return {"sub": "alice", "exp": int(time.time()) + 300, **extra}


@pytest.fixture
def jwks(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A JWKS endpoint on loopback, like Supabase's /auth/v1/.well-known/jwks.json."""
    keys = []
    for kid, key, algo in [("rsa1", RSA_KEY, RSAAlgorithm), ("ec1", EC_KEY, ECAlgorithm)]:
        jwk = json.loads(algo.to_jwk(key.public_key()))
        keys.append({**jwk, "kid": kid, "use": "sig"})
    body = json.dumps({"keys": keys}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # (polled every 50 ms, not serve_forever's 0.5 s: shutdown() waits for the next poll)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/auth/v1/.well-known/jwks.json"
    monkeypatch.setenv("JWT_JWKS_URL", url)
    settings.cache_clear()
    auth._jwks_client.cache_clear()
    yield url
    server.shutdown()
    auth._jwks_client.cache_clear()


def test_hs256_user_token_gives_a_user_with_every_scope() -> None:
    who = auth.verify_jwt(jwt.encode(claims(), SECRET, algorithm="HS256"))
    assert (who.user_id, who.kind, who.scopes) == (
        "alice",
        "user",
        frozenset({"memory:read", "memory:write"}),
    )


@pytest.mark.parametrize(
    "token",
    [
        jwt.encode(claims(exp=int(time.time()) - 100), SECRET, algorithm="HS256"),
        jwt.encode({"sub": "alice"}, SECRET, algorithm="HS256"),
        jwt.encode(claims(), "wrong-secret-wrong-secret-wrong-secret", algorithm="HS256"),
        jwt.encode(claims(), None, algorithm="none"),
        jwt.encode(claims(), SECRET, algorithm="HS512"),
        jwt.encode(claims(sub="a:b"), SECRET, algorithm="HS256"),
        "not.a.jwt",
    ],
    ids=["expired", "no-exp", "bad-signature", "alg-none", "other-alg", "bad-sub", "garbage"],
)
def test_bad_jwts_are_unauthorized(token: str) -> None:
    with pytest.raises(Unauthorized):
        auth.verify_jwt(token)


def test_issuer_and_audience_are_checked_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JWT_ISSUER", "https://proj.supabase.co/auth/v1")
    monkeypatch.setenv("JWT_AUDIENCE", "authenticated")
    settings.cache_clear()
    good = claims(iss="https://proj.supabase.co/auth/v1", aud="authenticated")
    assert auth.verify_jwt(jwt.encode(good, SECRET, algorithm="HS256")).user_id == "alice"
    for bad in [{**good, "iss": "https://evil"}, {**good, "aud": "other"}, claims()]:
        with pytest.raises(Unauthorized):
            auth.verify_jwt(jwt.encode(bad, SECRET, algorithm="HS256"))


def test_rs256_and_es256_through_jwks(jwks: str) -> None:
    rs = jwt.encode(claims(), RSA_KEY, algorithm="RS256", headers={"kid": "rsa1"})
    es = jwt.encode(claims(sub="bob"), EC_KEY, algorithm="ES256", headers={"kid": "ec1"})
    assert auth.verify_jwt(rs).user_id == "alice"
    assert auth.verify_jwt(es).user_id == "bob"
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(Unauthorized):
        auth.verify_jwt(jwt.encode(claims(), other, algorithm="RS256", headers={"kid": "rsa1"}))
    with pytest.raises(Unauthorized):
        auth.verify_jwt(jwt.encode(claims(), RSA_KEY, algorithm="RS256", headers={"kid": "unknown"}))


@pytest.mark.parametrize(("alg", "key", "kid"), [("ES256", EC_KEY, "rsa1"), ("RS256", RSA_KEY, "ec1")])
def test_a_header_algorithm_that_is_not_its_keys_is_refused(jwks: str, alg: str, key: Any, kid: str) -> None:
    # a forged header pairing ES256 with the RSA key (or RS256 with the EC key): pyjwt would raise
    # a TypeError from the crypto layer, which must be a 401, never a 500
    token = jwt.encode(claims(), key, algorithm=alg, headers={"kid": kid})
    with pytest.raises(Unauthorized, match="algorithm"):
        auth.verify_jwt(token)


def test_a_key_set_that_cannot_be_fetched_is_an_outage_not_a_bad_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import socket

    from synapse.core.errors import UpstreamUnavailable

    # Given a JWKS URL where nothing listens (a port just freed)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("JWT_JWKS_URL", f"http://127.0.0.1:{port}/jwks.json")
    settings.cache_clear()
    auth._jwks_client.cache_clear()
    token = jwt.encode(claims(), RSA_KEY, algorithm="RS256", headers={"kid": "rsa1"})
    # Then verifying a token is a 503-kind failure, not "unauthorized"
    with pytest.raises(UpstreamUnavailable):
        auth.verify_jwt(token)
    auth._jwks_client.cache_clear()


def test_hs256_signed_with_the_jwks_public_key_is_refused(jwks: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the classic algorithm-confusion attack: HMAC keyed with the public key
    monkeypatch.delenv("JWT_SECRET")
    settings.cache_clear()
    pem = RSA_KEY.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    import base64
    import hashlib
    import hmac

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "rsa1"}).encode())
    payload = b64(json.dumps(claims()).encode())
    signature = b64(hmac.new(pem, f"{header}.{payload}".encode(), hashlib.sha256).digest())
    with pytest.raises(Unauthorized):
        auth.verify_jwt(f"{header}.{payload}.{signature}")


def test_authenticate_needs_a_bearer_header() -> None:
    for header in [None, "", "Token abc", "Bearer "]:
        with pytest.raises(Unauthorized):
            auth.authenticate(header)


def test_principal_scopes_and_user_only_rules() -> None:
    agent = auth.Principal(user_id="alice", kind="agent", scopes=frozenset({"memory:read"}), key_id="k")
    agent.require(Scope.read)
    with pytest.raises(Forbidden):
        agent.require(Scope.write)
    with pytest.raises(Forbidden):
        agent.require_user()
    with pytest.raises(Forbidden):
        agent.check_user_id("bob")
    assert agent.check_user_id(None) == "alice" == agent.check_user_id("alice")
    assert auth.Principal.from_context(agent.context()) == agent
    with pytest.raises(Unauthorized):
        auth.Principal.from_context({"userId": "alice"})
    with pytest.raises(Unauthorized):
        auth.Principal.from_context({"userId": "a:b", "kind": "user"})
