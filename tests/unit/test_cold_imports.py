"""Cold starts, without timing: a function that calls no model imports none of the heavy packages at
init (numpy, google.genai, jwt, the crypto, boto3, the MCP SDK). `python -m bench --only coldstart`
times the same imports against the stack's floor; this keeps them honest on every test run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench.coldstart import HEAVY, MODEL_FUNCTIONS, UNJUDGED, lambda_env

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "common" / "python"

# one interpreter imports every non-model function in turn (under its own module name) and reports,
# after each, the heavy packages that have appeared
_PROBE = """
import importlib.util, json, sys
found = {}
for name, path in json.loads(sys.argv[1]):
    spec = importlib.util.spec_from_file_location(f"app_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(__import__("pathlib").Path(path).parent))
    spec.loader.exec_module(module)
    sys.path.pop(0)
    assert callable(module.handler), name
    found[name] = [m for m in json.loads(sys.argv[2]) if m in sys.modules]
print(json.dumps(found))
"""


def non_model_functions() -> list[str]:
    names = sorted(p.parent.name for p in (ROOT / "functions").glob("*/app.py"))
    return [n for n in names if n not in MODEL_FUNCTIONS and n not in UNJUDGED]


def test_the_model_functions_named_by_the_bench_exist() -> None:
    names = {p.parent.name for p in (ROOT / "functions").glob("*/app.py")}
    assert names >= MODEL_FUNCTIONS | UNJUDGED


def test_no_function_without_a_model_imports_a_heavy_package_at_init() -> None:
    # Given every function that calls no model, imported as Lambda imports it (the deployed
    # environment: tracing on, the X-Ray SDK's Lambda sampler)
    names = non_model_functions()
    env = {**lambda_env(names[0]), "PYTHONPATH": os.pathsep.join([str(LAYER), str(ROOT)])}
    paths = [(n, str(ROOT / "functions" / n / "app.py")) for n in names]
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(paths), json.dumps(HEAVY)],
        env=env,
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    found: dict[str, list[str]] = json.loads(proc.stdout.strip().splitlines()[-1])
    # Then none of them has imported numpy, google.genai, jwt, cryptography, boto3 or the MCP SDK
    first = {name: heavy for name, heavy in found.items() if heavy}
    assert not first, f"heavy packages at init (the first function listed imported them): {first}"
