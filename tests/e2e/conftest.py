"""The local server (`python -m local`) as a subprocess, used over real HTTP as a client would."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jwt as pyjwt
import pytest
import requests

from local.spawn import server_env

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_TEMPLATE = ROOT / "tests" / "fixtures" / "local_template" / "template.yaml"
E2E_JWT_SECRET = "e2e-test-secret-0123456789abcdef0123456789"
START_TIMEOUT = 60.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalServer:
    """A running `python -m local`: .url, .jwt, .api_key, .data_dir, .jwt_secret; .restart(kill=...)."""

    def __init__(self, data_dir: Path, template: Path, extra_env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.template = template
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.jwt_secret = E2E_JWT_SECRET
        self.jwt = ""
        self.api_key: str | None = None
        self.info: dict[str, Any] = {}
        self.extra_env = extra_env or {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir.parent / f"{data_dir.name}-server.log"

    def _env(self) -> dict[str, str]:
        return server_env(self.port, str(self.data_dir), self.jwt_secret, **self.extra_env)

    def start(self) -> None:
        state = self.data_dir / "local.json"
        state.unlink(missing_ok=True)
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "local", "--template", str(self.template)],
            cwd=ROOT,
            env=self._env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"local server exited ({self.proc.returncode}):\n{self.logs()[-4000:]}")
            if state.exists():
                try:
                    info = json.loads(state.read_text())
                    if info.get("pid") == self.proc.pid and requests.get(f"{self.url}/health", timeout=2).ok:
                        self.info = info
                        self.jwt = info["jwt"]
                        self.api_key = info.get("api_key")
                        return
                except (ValueError, requests.RequestException):
                    pass
            time.sleep(0.2)
        self.stop(kill=True)
        raise RuntimeError(
            f"local server did not answer /health in {START_TIMEOUT} s:\n{self.logs()[-4000:]}"
        )

    def stop(self, kill: bool = False) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None

    def restart(self, kill: bool = True) -> None:
        """Stop (SIGKILL by default: a crash; kill=False: SIGTERM) and start again on the same port."""
        self.stop(kill=kill)
        self.start()

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def make_jwt(self, sub: str, days: int = 1, **claims: Any) -> str:
        now = int(time.time())
        payload = {"sub": sub, "iat": now, "exp": now + days * 86400, **claims}
        return pyjwt.encode(payload, self.jwt_secret, algorithm="HS256")

    def headers(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.jwt}", "content-type": "application/json"}


@pytest.fixture(scope="session")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    """`python -m local` on template.yaml, a free port and a temporary DATA_DIR."""
    server = LocalServer(tmp_path_factory.mktemp("local-run") / "data", ROOT / "template.yaml")
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def fixture_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    """`python -m local` on the runtime's own fixture template (fake functions, same shape)."""
    server = LocalServer(
        tmp_path_factory.mktemp("local-fixture") / "data",
        FIXTURE_TEMPLATE,
        extra_env={"LOCAL_TTL_SWEEP_SECONDS": "1"},
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture
def jwt_for(local_server: LocalServer) -> Callable[..., str]:
    """Make a JWT for another user, signed with the server's JWT_SECRET: `jwt_for("bob")`."""
    return local_server.make_jwt
