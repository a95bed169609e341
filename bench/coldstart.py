"""4. Cold start: each function's import time in a fresh interpreter (google.genai or not); layer size."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.common import LAYER, ROOT

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
sys.path[:0] = [{layer!r}, {fn!r}]
t0 = time.perf_counter()
import app
ms = (time.perf_counter() - t0) * 1000
print(json.dumps({{"ms": ms, "genai": "google.genai" in sys.modules, "modules": len(sys.modules)}}))
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "PYTHONPATH"}
    env.update(
        AWS_DEFAULT_REGION="us-east-1",
        AWS_REGION="us-east-1",
        POWERTOOLS_SERVICE_NAME="synapse",
        POWERTOOLS_TRACE_DISABLED="true",
        POWERTOOLS_METRICS_DISABLED="true",
    )
    return env


def _once(name: str, importtime: bool = False) -> dict[str, Any]:
    code = _PROBE.format(layer=str(LAYER), fn=str(ROOT / "functions" / name))
    cmd = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", code]
    proc = subprocess.run(
        cmd, cwd=tempfile.gettempdir(), env=_env(), capture_output=True, text=True, timeout=120
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
    """One fresh interpreter per function, under -X importtime (which adds a little to the wall time)."""
    names = sorted(p.parent.name for p in (ROOT / "functions").glob("*/app.py"))

    def measure(name: str) -> tuple[str, dict[str, Any]]:
        profile = _once(name, importtime=True)
        row = {
            "import_ms": round(profile["ms"], 1),
            "modules": profile["modules"],
            "google_genai_imported": profile["genai"],
            "calls_a_model": name in MODEL_FUNCTIONS,
            "heaviest_ms": profile["heaviest"],
        }
        row["pass"] = (not row["google_genai_imported"]) and (
            row["calls_a_model"] or row["import_ms"] < LIMIT_MS
        )
        return name, row

    with ThreadPoolExecutor(max_workers=1) as pool:  # one at a time: 2 cores
        rows = dict(pool.map(measure, names))
    log(f"  imports: {len(rows)} functions")
    return rows


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def layer_size(log: Any) -> dict[str, Any]:
    built = ROOT / ".aws-sam" / "build" / "CommonLayer"
    source = "sam build output (.aws-sam/build/CommonLayer)"
    tmp = None
    if not built.exists():
        tmp = Path(tempfile.mkdtemp(prefix="bench-layer-"))
        built = tmp
        source = "pip install --target (manylinux2014_x86_64, cp313) + the synapse package"
        target = tmp / "python"
        subprocess.run(
            [
                sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target),
                "-r", str(ROOT / "layers" / "common" / "requirements.txt"),
                "--platform", "manylinux2014_x86_64", "--only-binary=:all:", "--python-version", "3.13",
            ],
            check=True,
        )  # fmt: skip
        shutil.copytree(LAYER / "synapse", target / "synapse", dirs_exist_ok=True)
    try:
        total = _du(built)
        base = built / "python" if (built / "python").exists() else built
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
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
