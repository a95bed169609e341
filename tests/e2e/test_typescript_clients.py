"""The TypeScript client and the Supabase edge-function proxy, in the real runtime (Deno, from PyPI's
`deno` package), against the local server.

The Deno tests live beside the code (clients/typescript/*_test.ts,
clients/supabase/functions/make-server-synapse/*_test.ts); this module runs them with the server's URL
and a fresh user's JWT in the environment. Deno's npm downloads are cached in .deno/ at the
repository's root (DENO_DIR), and every run is `--frozen` on the committed deno.lock files.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path
from types import ModuleType

import pytest
import requests

from tests.e2e.conftest import ROOT, LocalServer

CLIENT = ROOT / "clients" / "typescript"
PROXY = ROOT / "clients" / "supabase" / "functions" / "make-server-synapse"
DENO_TIMEOUT = 300


def _ts_types() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ts_types", CLIENT / "scripts" / "ts_types.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ts_types = _ts_types()


def deno(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run the Deno binary; fail the test with its output unless it exits 0."""
    proc = subprocess.run(
        [ts_types.deno_bin(), *args],
        cwd=cwd,
        env={**ts_types.deno_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=DENO_TIMEOUT,
        check=False,
    )
    output = f"{proc.stdout}\n{proc.stderr}"
    assert proc.returncode == 0, f"deno {' '.join(args)} exited {proc.returncode}:\n{output[-8000:]}"
    return output


def synapse_env(server: LocalServer, who: str) -> dict[str, str]:
    """The server's URL, a JWT of a fresh user and an agent's API key (of the server's own user)."""
    user_id = f"{who}-{uuid.uuid4().hex[:10]}"
    return {
        "SYNAPSE_URL": server.url,
        "SYNAPSE_JWT": server.make_jwt(user_id),
        "SYNAPSE_USER_ID": user_id,
        "SYNAPSE_API_KEY": server.api_key or "",
    }


def test_the_typescript_and_edge_sources_type_check_lint_and_are_formatted() -> None:
    deno("check", "--frozen", "mod.ts", "client_test.ts", cwd=CLIENT)
    deno("check", "--frozen", "index.ts", "memory.ts", "index_test.ts", "memory_test.ts", cwd=PROXY)
    for folder in (CLIENT, PROXY):
        deno("lint", cwd=folder)
        deno("fmt", "--check", cwd=folder)


def test_the_typescript_client_against_the_local_server(local_server: LocalServer) -> None:
    deno(
        "test",
        "--frozen",
        "--allow-net",
        "--allow-env",
        "--allow-read",
        "client_test.ts",
        cwd=CLIENT,
        env=synapse_env(local_server, "ts-client"),
    )


def test_the_committed_types_are_generated_from_the_served_openapi_document(
    local_server: LocalServer, tmp_path: Path
) -> None:
    # Given the document the server serves, and the one `make ts-types` reads offline
    served = requests.get(f"{local_server.url}/openapi.json", timeout=30).json()
    assert ts_types.served_document() == served, "make ts-types would not read the served document"

    # When the generator runs over it
    fresh = tmp_path / "schema.d.ts"
    ts_types.generate(served, fresh)

    # Then the committed file is byte for byte what it makes
    assert fresh.read_bytes() == ts_types.SCHEMA.read_bytes(), (
        "clients/typescript/src/schema.d.ts is out of date with GET /openapi.json: run `make ts-types`"
    )


def test_the_edge_function_standalone_serves_a_chat_turn(local_server: LocalServer) -> None:
    deno(
        "test",
        "--frozen",
        "--allow-net",
        "--allow-env",
        "--allow-read",
        "--allow-run",
        "index_test.ts",
        cwd=PROXY,
        env=synapse_env(local_server, "edge"),
    )


def test_the_edge_routes_mounted_in_another_function(local_server: LocalServer) -> None:
    deno(
        "test",
        "--frozen",
        "--allow-net",
        "--allow-env",
        "--allow-read",
        "memory_test.ts",
        cwd=PROXY,
        env=synapse_env(local_server, "edge-mount"),
    )


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_client_bundle_runs_in_node(local_server: LocalServer, tmp_path: Path) -> None:
    # Given the client bundled to one ES module (as for browsers and Node without TypeScript)
    bundle = tmp_path / "synapse.js"
    deno(
        "bundle",
        "--frozen",
        "--platform",
        "browser",
        "--format",
        "esm",
        "-o",
        str(bundle),
        "mod.ts",
        cwd=CLIENT,
    )
    vars = synapse_env(local_server, "ts-node")
    script = tmp_path / "run.mjs"
    script.write_text(
        f"""
import {{ Synapse, SynapseError }} from {json.dumps(bundle.as_uri())};
const s = new Synapse({{ baseUrl: process.env.SYNAPSE_URL, token: process.env.SYNAPSE_JWT }});
const m = await s.memories.create({{ category: "fact", key: "runtime", content: "Runs in Node too" }});
const r = await s.recall("which runtime?");
let code = null;
try {{ await new Synapse({{ baseUrl: process.env.SYNAPSE_URL, token: "bad" }}).health(); }} catch (e) {{ }}
try {{ await s.memories.get("00000000-0000-0000-0000-000000000000"); }}
catch (e) {{ code = e instanceof SynapseError ? e.code : String(e); }}
console.log(JSON.stringify({{ id: m.id, top: r.memories[0].id, code }}));
"""
    )
    # When Node runs it
    proc = subprocess.run(
        ["node", str(script)],
        env={**os.environ, **vars},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # Then it works as in Deno
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["top"] == out["id"] and out["code"] == "not_found", out
