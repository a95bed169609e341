"""The dev JWT secret, a user JWT and an agent API key for the start-up banner."""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jwt

from local.aws import write_private

log = logging.getLogger("local.credentials")

DEV_USER = "alice"
SECRET_FILE = "jwt_secret"
API_KEY_FILE = "api_key.json"


def dev_secret(data_dir: Path) -> str:
    """The JWT secret of this DATA_DIR: generated once, kept, so printed tokens survive restarts."""
    path = data_dir / SECRET_FILE
    if path.exists():
        value = path.read_text(encoding="utf-8").strip()
        if value:
            return value
    value = "dev-" + secrets.token_urlsafe(32)
    write_private(path, value)
    return value


def configured_claims(env: Mapping[str, str]) -> dict[str, str]:
    """`iss` and `aud` as the server checks them (JWT_ISSUER / JWT_AUDIENCE), so the printed token is
    accepted by the server that prints it."""
    wanted = {"iss": env.get("JWT_ISSUER", "").strip(), "aud": env.get("JWT_AUDIENCE", "").strip()}
    return {claim: value for claim, value in wanted.items() if value}


def make_jwt(secret: str, sub: str = DEV_USER, days: int = 30, **claims: Any) -> str:
    now = int(time.time())
    payload = {"sub": sub, "iat": now, "exp": now + days * 86400, **claims}
    return jwt.encode(payload, secret, algorithm="HS256")


def ensure_api_key(data_dir: Path, is_valid: Callable[[str], bool | None]) -> str | None:
    """The saved agent key when it still authenticates, else a new one issued by the auth service.

    `is_valid(key)` answers True/False, or None when it cannot tell (then a saved key is kept).
    Returns None, with a log line, when the project's code cannot issue keys yet.
    """
    path = data_dir / API_KEY_FILE
    if path.exists():
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            key = str(saved["key"])
            if is_valid(key) is not False:
                return key
            log.info("the saved API key no longer authenticates; issuing a new one")
        except (ValueError, KeyError):
            log.warning("%s is unreadable; issuing a new API key", path)
    try:
        from synapse.services.account import auth  # the project's own code, loaded lazily

        issue = auth.issue_api_key
    except (ImportError, AttributeError) as exc:
        log.warning(
            "no API key was made: synapse.services.account.auth.issue_api_key is not available (%s)",
            type(exc).__name__,
        )
        return None
    try:
        record, plain = issue(DEV_USER, "local-dev", ["memory:read", "memory:write"])
    except Exception as exc:  # noqa: BLE001 - the banner degrades; the server still runs
        log.warning("no API key was made: issue_api_key failed (%s)", type(exc).__name__)
        return None
    key_id = getattr(record, "key_id", None)
    write_private(path, json.dumps({"key": plain, "user_id": DEV_USER, "key_id": key_id}))
    return str(plain)
