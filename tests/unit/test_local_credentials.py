"""The local run's printed user JWT is accepted by the server that prints it."""

from __future__ import annotations

import os

import pytest

from local.credentials import configured_claims, make_jwt
from synapse.core.config import settings
from synapse.core.errors import Unauthorized
from synapse.services.account import auth

SECRET = "local-secret-that-is-long-enough-for-hs256"


def test_the_printed_jwt_carries_the_issuer_and_audience_the_server_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a local run started with claim checks on
    monkeypatch.setenv("JWT_SECRET", SECRET)
    monkeypatch.setenv("JWT_ISSUER", "https://issuer.example")
    monkeypatch.setenv("JWT_AUDIENCE", "authenticated")
    settings.cache_clear()
    try:
        # When the banner's token is made
        token = make_jwt(SECRET, "alice", **configured_claims(os.environ))
        # Then the server accepts it; a token without the claims is refused
        assert auth.verify_jwt(token).user_id == "alice"
        with pytest.raises(Unauthorized):
            auth.verify_jwt(make_jwt(SECRET, "alice"))
    finally:
        settings.cache_clear()


def test_no_claims_are_added_when_none_are_checked() -> None:
    assert configured_claims({"JWT_ISSUER": " ", "OTHER": "x"}) == {}
