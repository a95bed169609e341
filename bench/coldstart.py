"""4. Cold start: each function's import time in a fresh interpreter, against the stack's floor measured in
the same run (paired, median); heavy packages imported at init or not; the layer's size."""

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

# The functions that embed or call an LLM at request time (justified in the README, Performance):
# writes of content embed it (create, update, restore of another content), recall and context embed
# the query, ingest extracts and embeds, the summaries call the summarizer, and the MCP tools do all
# of these. Their first request loads the model client, so their import is reported, not judged.
MODEL_FUNCTIONS = frozenset(
    {
        "memory_create",
        "memory_update",
        "memory_restore",
        "memory_ingest",
        "memory_recall",
        "memory_context",
        "memory_summarize",
        "summarize_session",
        "mcp",
    }
)
# Judged against nothing: docs merges every function's OpenAPI document at import (the issue leaves it out)
UNJUDGED = frozenset({"docs"})
EXCESS_LIMIT_MS = 50.0  # a non-model function imports within the stack's floor + this, same run
# packages no non-model function may import at init (tests/unit/test_cold_imports.py checks the same)
HEAVY = ("numpy", "google.genai", "jwt", "cryptography", "boto3", "mcp", "mangum")

_PROBE = """
import sys, time, json
sys.path[:0] = [{fn!r}, {layer!r}]
{pre}
t0, c0 = time.perf_counter(), time.process_time()
{stmt}
ms, cpu = (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000
heavy = [m for m in {heavy!r} if m in sys.modules]
print(json.dumps({{"ms": ms, "cpu_ms": cpu, "heavy": heavy, "modules": len(sys.modules)}}))
"""
RUNS = 7  # pairs of fresh interpreters (the floor, then the function, in turn) per function
# What Lambda's Python runtime has imported before it imports the handler's module (awslambdaric
# 4.2.2's bootstrap, less its bundled simplejson and C client). The target is judged on the bare
# interpreter; this second figure is the share Lambda would attribute to the function's own module.
RUNTIME_PRELOAD = "import importlib, json, logging, os, sys, time, traceback, decimal, math, enum"
# The floor every function stands on: what the mandated stack costs before any code of ours, built as
# synapse/observability.py and every app.py build it (Powertools' resolver with validation, Logger,
# Metrics, a Tracer patching botocore, which with tracing on imports the X-Ray SDK; botocore; pydantic)
STACK = (
    "from aws_lambda_powertools import Logger, Metrics, Tracer; "
    "from aws_lambda_powertools.event_handler import APIGatewayHttpResolver; "
    "import botocore.session, pydantic; "
    "Logger(); Metrics(namespace='Synapse'); Tracer(patch_modules=('botocore',)); "
    "APIGatewayHttpResolver(enable_validation=True)"
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
    code = _PROBE.format(
        layer=str(layer / "python"), fn=str(ROOT / "functions" / name), stmt=stmt, pre=pre, heavy=HEAVY
    )
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


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 1)


def judge(name: str, excess_cpu_ms: float, heavy: list[str]) -> bool | None:
    """PASS/FAIL of one function: a non-model function (docs aside) imports within the floor + 50 ms
    (CPU time, against the floor measured beside it) and none of HEAVY; model functions and docs:
    None (reported)."""
    if name in MODEL_FUNCTIONS or name in UNJUDGED:
        return None
    return excess_cpu_ms <= EXCESS_LIMIT_MS and not heavy


def imports(log: Any, runs: int = RUNS) -> dict[str, Any]:
    """Per function, `runs` pairs of fresh Lambda-like interpreters: the floor (STACK) and the
    function's `import app`, in turn (the order alternates), so that both see the same load. The
    excess of a function is its fastest import less the fastest floor of its pairs, in CPU time (what
    a function's own vCPU would spend: on this shared machine the wall clock also counts waiting for a
    core, and the fastest of several runs is the one least disturbed by other jobs); the median of
    the paired differences (CPU and wall) is reported beside it. Then one more run under
    -X importtime for the heaviest packages."""
    names = sorted(p.parent.name for p in (ROOT / "functions").glob("*/app.py"))
    layer, source = layer_dir(log)
    floors: list[dict[str, Any]] = []

    def measure(name: str) -> tuple[str, dict[str, Any]]:
        pairs = []
        for i in range(runs):
            if i % 2:
                fn, floor = _once(name, layer), _once(name, layer, stmt=STACK)
            else:
                floor, fn = _once(name, layer, stmt=STACK), _once(name, layer)
            pairs.append((floor, fn))
        floors.extend(f for f, _ in pairs)
        profile = _once(name, layer, importtime=True)
        heavy = sorted({m for _, r in pairs for m in r["heavy"]})
        row: dict[str, Any] = {
            "import_ms": _median([r["ms"] for _, r in pairs]),
            "import_cpu_ms": _median([r["cpu_ms"] for _, r in pairs]),
            "floor_cpu_ms": _median([f["cpu_ms"] for f, _ in pairs]),
            "min_cpu_ms": round(min(r["cpu_ms"] for _, r in pairs), 1),
            "floor_min_cpu_ms": round(min(f["cpu_ms"] for f, _ in pairs), 1),
            "excess_cpu_ms": round(
                min(r["cpu_ms"] for _, r in pairs) - min(f["cpu_ms"] for f, _ in pairs), 1
            ),
            "excess_cpu_ms_paired_median": _median([r["cpu_ms"] - f["cpu_ms"] for f, r in pairs]),
            "excess_ms": _median([r["ms"] - f["ms"] for f, r in pairs]),
            "modules": pairs[0][1]["modules"],
            "heavy_imported": heavy,
            "google_genai_imported": "google.genai" in heavy,
            "calls_a_model": name in MODEL_FUNCTIONS,
            "judged": name not in MODEL_FUNCTIONS and name not in UNJUDGED,
            "heaviest_ms": profile["heaviest"],
        }
        row["pass"] = judge(name, row["excess_cpu_ms"], heavy)
        return name, row

    with ThreadPoolExecutor(max_workers=1) as pool:  # one at a time: 2 cores
        rows = dict(pool.map(measure, names))
    floor_rt = [_once("health", layer, stmt=STACK, pre=RUNTIME_PRELOAD) for _ in range(runs)]
    judged = {n: r for n, r in rows.items() if r["judged"]}
    floor_cpu = _median([f["cpu_ms"] for f in floors])
    log(
        f"  imports: {len(rows)} functions against {source}; floor {floor_cpu} ms"
        f" CPU; {sum(1 for r in judged.values() if r['pass'])}/{len(judged)} non-model functions within"
        f" +{EXCESS_LIMIT_MS:.0f} ms"
    )
    for name, r in rows.items():
        verdict = {True: "PASS", False: "FAIL", None: "model" if r["calls_a_model"] else "info"}[r["pass"]]
        paired = r["excess_cpu_ms_paired_median"]
        log(
            f"    {name:20} +{r['excess_cpu_ms']:6.1f} ms CPU (paired median +{paired:6.1f},"
            f" wall +{r['excess_ms']:6.1f})  {verdict}"
        )
    return {
        "layer": source,
        "runs": runs,
        "stack_floor_ms": _median([f["ms"] for f in floors]),
        "stack_floor_cpu_ms": floor_cpu,
        "stack_floor_min_cpu_ms": round(min(f["cpu_ms"] for f in floors), 1),
        "stack_floor_ms_after_runtime": _median([f["ms"] for f in floor_rt]),
        "excess_limit_ms": EXCESS_LIMIT_MS,
        "model_functions": sorted(MODEL_FUNCTIONS),
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
