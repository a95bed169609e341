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
# Judged against nothing: docs merges every function's OpenAPI document at import (the issue leaves it
# out); the snapshot writer is no route, and every call of it packs a corpus with numpy
UNJUDGED = frozenset({"docs", "snapshot_writer"})
EXCESS_LIMIT_MS = 50.0  # a non-model function imports within the stack's floor + this, same run
# packages no non-model function may import at init (tests/unit/test_cold_imports.py checks the same)
HEAVY = ("numpy", "google.genai", "jwt", "cryptography", "boto3", "mcp", "mangum")

_PROBE = """
import sys, time, json
sys.path[:0] = [{fn!r}, {layer!r}]
{pre}
t0, c0 = time.perf_counter(), time.process_time()
{floor}
print("--- the function", file=sys.stderr)
t1, c1 = time.perf_counter(), time.process_time()
{stmt}
t2, c2 = time.perf_counter(), time.process_time()
heavy = [m for m in {heavy!r} if m in sys.modules]
print(json.dumps({{"floor_ms": (t1 - t0) * 1000, "floor_cpu_ms": (c1 - c0) * 1000,
    "ms": (t2 - t1) * 1000, "cpu_ms": (c2 - c1) * 1000, "heavy": heavy, "modules": len(sys.modules)}}))
"""
RUNS = 3  # fresh interpreters per function, each importing the floor, then the function
ALONE_RUNS = 1  # and fresh interpreters importing the function alone (a check of the sum)
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


def lambda_env(name: str, root: Path = ROOT) -> dict[str, str]:
    """What a deployed function's process sees at init: the template's environment (Globals and the
    function's own, Refs as names) and the variables the Lambda runtime sets. In Lambda, tracing is on
    (Tracing: Active) and the X-Ray SDK takes its local sampler, so both are as deployed."""
    from local.template import parse, resolve_environment

    tpl = parse(root / "template.yaml")
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


def layer_dir(log: Any, root: Path = ROOT) -> tuple[Path, str]:
    """The built layer's root (holding python/): sam build's output, else the Makefile's targets that
    sam build runs: the wheels once per requirements.txt (cached under .bench/), the package each time.
    `root`: the checkout whose layer it is (another one for a baseline, cached under its own .bench/)."""
    built = root / ".aws-sam" / "build" / "CommonLayer"
    if (built / "python" / "synapse").exists():
        return built, "sam build output (.aws-sam/build/CommonLayer)"
    key = hashlib.sha256((root / "layers" / "common" / "requirements.txt").read_bytes()).hexdigest()[:12]
    cached = root / ".bench" / f"layer-{key}"

    def make(target: str) -> None:
        cmd = ["make", "--no-print-directory", "-C", str(root), target, f"ARTIFACTS_DIR={cached}"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)

    if not (cached / ".complete").exists():
        log(f"  building the layer's dependencies into {cached} ...")
        shutil.rmtree(cached, ignore_errors=True)
        make("layer-deps")
        (cached / ".complete").touch()
    make("layer-package")
    return cached, "the Makefile's build-CommonLayer targets (what sam build runs)"


def _once(
    name: str,
    layer: Path,
    importtime: bool = False,
    stmt: str = "import app",
    floor: str = STACK,
    pre: str = "",
    root: Path = ROOT,
) -> dict[str, Any]:
    """One fresh interpreter: `floor` (the stack), then `stmt` (the function's module), each timed."""
    code = _PROBE.format(
        layer=str(layer / "python"),
        fn=str(root / "functions" / name),
        pre=pre,
        floor=floor,
        stmt=stmt,
        heavy=HEAVY,
    )
    # -I -S: no site-packages, no PYTHON* variables: the interpreter sees the stdlib, the function and
    # the layer, as on Lambda (whose runtime also bundles a boto3; the layer's pinned one comes first)
    # -B: /opt and /var/task are read-only on Lambda, so nothing is compiled for the next start
    flags = ["-I", "-S", "-B", *(["-X", "importtime"] if importtime else [])]
    proc = subprocess.run(
        [sys.executable, *flags, "-c", code],
        cwd=tempfile.gettempdir(),
        env=lambda_env(name, root),
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
    """The function's own heaviest imports, from -X importtime after the floor: the modules its app.py
    imports directly, each with its cumulative time (ms), the heaviest `top`."""
    lines = stderr.split("--- the function\n", 1)[-1].splitlines()
    rows = []
    for line in lines:
        m = re.match(r"import time:\s*(\d+)\s*\|\s*(\d+)\s*\|(\s*)(\S+)", line)
        if m:
            rows.append((len(m.group(3)), m.group(4), int(m.group(2)) / 1000.0))
    app = min((depth for depth, name, _ in rows if name == "app"), default=None)
    if app is None:
        return {}
    direct = {name: ms for depth, name, ms in rows if depth == app + 2}
    best = sorted(direct.items(), key=lambda kv: -kv[1])[:top]
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
    """Per function, `runs` fresh Lambda-like interpreters, each importing the floor (STACK) and then the
    function's module: the function's excess is what `import app` costs on top of the floor in the
    same interpreter (median, CPU time: what the function's own vCPU spends; the wall clock on this
    shared machine also counts waiting for a core). Measured so, the excess is one ~20-60 ms figure
    rather than the difference of two ~350 ms interpreter starts, whose noise is larger than the 50 ms
    being judged. It errs on the high side: the function builds its own Logger, Metrics, Tracer and
    resolver again. Beside it, `ALONE_RUNS` interpreters import the function alone (the check that
    floor + excess is what a cold start pays), then one run under -X importtime after the floor for the
    function's heaviest direct imports."""
    names = sorted(p.parent.name for p in (ROOT / "functions").glob("*/app.py"))
    layer, source = layer_dir(log)
    floors: list[dict[str, Any]] = []

    def measure(name: str) -> tuple[str, dict[str, Any]]:
        both = [_once(name, layer) for _ in range(runs)]
        alone = [_once(name, layer, floor="") for _ in range(ALONE_RUNS)]
        floors.extend(both)
        profile = _once(name, layer, importtime=True)
        heavy = sorted({m for r in both + alone for m in r["heavy"]})
        floor_cpu = _median([r["floor_cpu_ms"] for r in both])
        row: dict[str, Any] = {
            "excess_cpu_ms": _median([r["cpu_ms"] for r in both]),
            "excess_ms": _median([r["ms"] for r in both]),
            "floor_cpu_ms": floor_cpu,
            "import_cpu_ms": _median([r["cpu_ms"] for r in alone]),
            "import_ms": _median([r["ms"] for r in alone]),
            "modules": both[0]["modules"],
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
    floor_rt = [_once("health", layer, stmt="", pre=RUNTIME_PRELOAD) for _ in range(ALONE_RUNS)]
    judged = {n: r for n, r in rows.items() if r["judged"]}
    floor_cpu = _median([f["floor_cpu_ms"] for f in floors])
    log(
        f"  imports: {len(rows)} functions against {source}; floor {floor_cpu} ms"
        f" CPU; {sum(1 for r in judged.values() if r['pass'])}/{len(judged)} non-model functions within"
        f" +{EXCESS_LIMIT_MS:.0f} ms"
    )
    for name, r in rows.items():
        verdict = {True: "PASS", False: "FAIL", None: "model" if r["calls_a_model"] else "info"}[r["pass"]]
        log(
            f"    {name:20} +{r['excess_cpu_ms']:6.1f} ms CPU (wall +{r['excess_ms']:6.1f};"
            f" alone {r['import_cpu_ms']:6.1f} ms CPU)  {verdict}"
        )
    return {
        "layer": source,
        "runs": runs,
        "alone_runs": ALONE_RUNS,
        "stack_floor_ms": _median([f["floor_ms"] for f in floors]),
        "stack_floor_cpu_ms": floor_cpu,
        "stack_floor_ms_after_runtime": _median([f["floor_ms"] for f in floor_rt]),
        "excess_limit_ms": EXCESS_LIMIT_MS,
        "model_functions": sorted(MODEL_FUNCTIONS),
        "runtime_preload": RUNTIME_PRELOAD,
        "stack_floor": STACK,
        "functions": rows,
    }


def against(baseline: Path, log: Any, pairs: int = 5) -> dict[str, Any]:
    """Each function's import over the floor here and in another checkout (`baseline`, e.g. the commit
    before a change), measured in turn: baseline, this, baseline, this ... `pairs` times, so that both
    see the same machine; per function the median excess of each and their difference. Functions only
    one of the two has are left out."""
    here = {p.parent.name for p in (ROOT / "functions").glob("*/app.py")}
    there = {p.parent.name for p in (baseline / "functions").glob("*/app.py")}
    names = sorted(here & there)
    layer_here, _ = layer_dir(log)
    layer_there, _ = layer_dir(log, baseline)
    rows: dict[str, Any] = {}
    for name in names:
        before: list[float] = []
        after: list[float] = []
        for _ in range(pairs):
            before.append(_once(name, layer_there, root=baseline)["cpu_ms"])
            after.append(_once(name, layer_here)["cpu_ms"])
        diffs = [a - b for a, b in zip(after, before, strict=True)]
        rows[name] = {
            "baseline_excess_cpu_ms": _median(before),
            "excess_cpu_ms": _median(after),
            "difference_ms": _median(diffs),
            "calls_a_model": name in MODEL_FUNCTIONS,
        }
        log(
            f"    {name:20} baseline +{rows[name]['baseline_excess_cpu_ms']:6.1f} ms, now"
            f" +{rows[name]['excess_cpu_ms']:6.1f} ms CPU (pairwise median difference"
            f" {rows[name]['difference_ms']:+.1f} ms)"
        )
    judged = [r for n, r in rows.items() if not r["calls_a_model"] and n not in UNJUDGED]
    return {
        "baseline": str(baseline),
        "pairs": pairs,
        "functions": rows,
        "median_difference_ms": _median([r["difference_ms"] for r in judged]) if judged else None,
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
