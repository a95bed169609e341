"""4. Cold start: each function's import time in a fresh interpreter (google.genai or not); layer size."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.common import ROOT

MODEL_FUNCTIONS = {
    "memory_create",
    "memory_update",
    "memory_ingest",
    "memory_recall",
    "memory_summarize",
    "summarize_session",
}
LIMIT_MS = 300.0

_PROBE = """
import sys, time, json
sys.path[:0] = [{fn!r}, {layer!r}]
{pre}
t0 = time.perf_counter()
{stmt}
ms = (time.perf_counter() - t0) * 1000
print(json.dumps({{"ms": ms, "genai": "google.genai" in sys.modules, "modules": len(sys.modules)}}))
"""
RUNS = 3  # fresh interpreters per function; the median is reported
# What Lambda's Python runtime has imported before it imports the handler's module (awslambdaric
# 4.2.2's bootstrap, less its bundled simplejson and C client). The target is judged on the bare
# interpreter; this second figure is the share Lambda would attribute to the function's own module.
RUNTIME_PRELOAD = "import importlib, json, logging, os, sys, time, traceback, decimal, math, enum"
# The floor every function stands on: what the mandated stack imports before any code of ours (the
# Powertools resolver, Logger, Metrics and a Tracer patching botocore; botocore; pydantic)
STACK = (
    "from aws_lambda_powertools import Logger, Metrics, Tracer; "
    "from aws_lambda_powertools.event_handler import APIGatewayHttpResolver; "
    "Tracer(patch_modules=('botocore',)); import botocore.session, pydantic"
)


def lambda_env(name: str) -> dict[str, str]:
    """What a deployed function's process sees at init: the template's environment (Globals and the
    function's own, Refs as names) and the variables the Lambda runtime sets. In Lambda, tracing is on
    (Tracing: Active) and the X-Ray SDK takes its local sampler, so both are as deployed."""
    from local.template import parse, resolve_environment

    tpl = parse(ROOT / "template.yaml")
    fn = next(f for f in tpl.functions.values() if f.file.parent.name == name)
    resources = {logical_id: logical_id for logical_id in tpl.raw.get("Resources") or {}}
    env = resolve_environment(tpl, fn.environment, resources, {}, process_env={})
    env.update(
        PATH=os.environ.get("PATH", "/usr/bin:/bin"),
        LANG="en_US.UTF-8",
        TZ=":UTC",
        LAMBDA_TASK_ROOT=str(fn.file.parent),
        LAMBDA_RUNTIME_DIR="/var/runtime",
        AWS_LAMBDA_FUNCTION_NAME=fn.logical_id,
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE=str(fn.memory),
        AWS_LAMBDA_FUNCTION_VERSION="$LATEST",
        AWS_EXECUTION_ENV="AWS_Lambda_python3.13",
        AWS_REGION="us-east-1",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ACCESS_KEY_ID="ASIABENCH",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_SESSION_TOKEN="bench",
        AWS_XRAY_DAEMON_ADDRESS="169.254.79.129:2000",
        AWS_XRAY_CONTEXT_MISSING="LOG_ERROR",
        _HANDLER=f"{fn.file.stem}.{fn.attr}",
    )
    return env


def layer_dir(log: Any) -> tuple[Path, str]:
    """The built layer's root (holding python/): sam build's output, else the Makefile's targets that
    sam build runs: the wheels once per requirements.txt (cached under .bench/), the package each time."""
    built = ROOT / ".aws-sam" / "build" / "CommonLayer"
    if (built / "python" / "synapse").exists():
        return built, "sam build output (.aws-sam/build/CommonLayer)"
    key = hashlib.sha256((ROOT / "layers" / "common" / "requirements.txt").read_bytes()).hexdigest()[:12]
    cached = ROOT / ".bench" / f"layer-{key}"

    def make(target: str) -> None:
        cmd = ["make", "--no-print-directory", "-C", str(ROOT), target, f"ARTIFACTS_DIR={cached}"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)

    if not (cached / ".complete").exists():
        log(f"  building the layer's dependencies into {cached.relative_to(ROOT)} ...")
        shutil.rmtree(cached, ignore_errors=True)
        make("layer-deps")
        (cached / ".complete").touch()
    make("layer-package")
    return cached, "the Makefile's build-CommonLayer targets (what sam build runs)"


def _once(
    name: str, layer: Path, importtime: bool = False, stmt: str = "import app", pre: str = ""
) -> dict[str, Any]:
    code = _PROBE.format(layer=str(layer / "python"), fn=str(ROOT / "functions" / name), stmt=stmt, pre=pre)
    # -I -S: no site-packages, no PYTHON* variables: the interpreter sees the stdlib, the function and
    # the layer, as on Lambda (whose runtime also bundles a boto3; the layer's pinned one comes first)
    # -B: /opt and /var/task are read-only on Lambda, so nothing is compiled for the next start
    flags = ["-I", "-S", "-B", *(["-X", "importtime"] if importtime else [])]
    proc = subprocess.run(
        [sys.executable, *flags, "-c", code],
        cwd=tempfile.gettempdir(),
        env=lambda_env(name),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode:
        raise RuntimeError(f"importing {name}: {proc.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    if importtime:
        out["heaviest"] = _heaviest(proc.stderr)
    return out


def _heaviest(stderr: str, top: int = 4) -> dict[str, float]:
    """Cumulative import time (ms) of the heaviest top-level packages, from -X importtime."""
    cumulative: dict[str, float] = {}
    for line in stderr.splitlines():
        m = re.match(r"import time:\s*(\d+)\s*\|\s*(\d+)\s*\|(\s*)(\S+)", line)
        if not m or "." in m.group(4) or m.group(4) == "app":
            continue
        name = m.group(4)
        cumulative[name] = max(cumulative.get(name, 0.0), int(m.group(2)) / 1000.0)
    best = sorted(cumulative.items(), key=lambda kv: -kv[1])[:top]
    return {k: round(v, 1) for k, v in best}


def imports(log: Any) -> dict[str, Any]:
    """Per function: the median import time of RUNS fresh Lambda-like interpreters, then one more
    under -X importtime for the heaviest packages."""
    names = sorted(p.parent.name for p in (ROOT / "functions").glob("*/app.py"))
    layer, source = layer_dir(log)

    def measure(name: str) -> tuple[str, dict[str, Any]]:
        runs = [_once(name, layer) for _ in range(RUNS)]
        after_runtime = [_once(name, layer, pre=RUNTIME_PRELOAD)["ms"] for _ in range(RUNS)]
        profile = _once(name, layer, importtime=True)
        row = {
            "import_ms": round(statistics.median(r["ms"] for r in runs), 1),
            "import_ms_after_runtime": round(statistics.median(after_runtime), 1),
            "modules": runs[0]["modules"],
            "google_genai_imported": any(r["genai"] for r in runs),
            "calls_a_model": name in MODEL_FUNCTIONS,
            "heaviest_ms": profile["heaviest"],
        }
        row["pass"] = (not row["google_genai_imported"]) and (
            row["calls_a_model"] or row["import_ms"] < LIMIT_MS
        )
        return name, row

    with ThreadPoolExecutor(max_workers=1) as pool:  # one at a time: 2 cores
        rows = dict(pool.map(measure, names))
    floor = [_once("health", layer, stmt=STACK)["ms"] for _ in range(2 * RUNS)]
    floor_rt = [_once("health", layer, stmt=STACK, pre=RUNTIME_PRELOAD)["ms"] for _ in range(2 * RUNS)]
    log(f"  imports: {len(rows)} functions, against {source}")
    return {
        "layer": source,
        "stack_floor_ms": round(statistics.median(floor), 1),
        "stack_floor_ms_after_runtime": round(statistics.median(floor_rt), 1),
        "runtime_preload": RUNTIME_PRELOAD,
        "stack_floor": STACK,
        "functions": rows,
    }


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def layer_size(log: Any) -> dict[str, Any]:
    built, source = layer_dir(log)
    total = _du(built)
    base = built / "python"
    parts = {p.name: _du(p) for p in base.iterdir() if p.is_dir() and not p.name.endswith(".dist-info")}
    top = sorted(parts.items(), key=lambda kv: -kv[1])[:6]
    out = {
        "source": source,
        "unzipped_mb": round(total / 1e6, 1),
        "limit_mb": 250,
        "largest_mb": {k: round(v / 1e6, 1) for k, v in top},
    }
    out["under_half_the_limit"] = out["unzipped_mb"] < 0.5 * 250
    log(f"  layer: {out['unzipped_mb']} MB")
    return out
