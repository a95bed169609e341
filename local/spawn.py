"""The environment for a `python -m local` child process (tests and benchmarks start servers too)."""

from __future__ import annotations

import os

# a child server must never reach real AWS or Gemini, nor inherit another server's JWT settings
_DROPPED = ("GEMINI_API_KEY", "GEMINI_BASE_URL", "JWT_JWKS_URL", "JWT_ISSUER", "JWT_AUDIENCE")


def server_env(port: int, data_dir: str, jwt_secret: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k not in _DROPPED}
    env.update(PORT=str(port), DATA_DIR=str(data_dir), JWT_SECRET=jwt_secret, PYTHONUNBUFFERED="1")
    env.update(extra)
    return env
