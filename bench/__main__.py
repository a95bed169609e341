"""`make bench` (= `python -m bench`): recall, cost, overlap, cold start, ingest, a chat turn, cold recall
with snapshots, the fleet simulation, end-to-end, the local server's throughput under 8 concurrent
clients, the Time issue's figures (recall latency with the period logic against the code before it;
the temporal set's recall@5 through the local server) and webhook deliveries.

    .venv/bin/python -m bench                 # the issue's sizes (1k/10k/100k), under 10 minutes
    .venv/bin/python -m bench --quick         # small sizes, a minute or two
    .venv/bin/python -m bench --only scoring,cost

Every figure is measured against a baseline computed in the same run. The results go to
.bench/report.json (machine, figures, targets, pass/fail) and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import ROOT, machine

SECTIONS = (
    "scoring",
    "cost",
    "overlap",
    "coldstart",
    "ingest",
    "chatturn",
    "snapshot",
    "fleet",
    "e2e",
    "throughput",
    "periods",
    "temporal",
    "webhooks",
)


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    p.add_argument("--only", default="", help=f"comma-separated sections of {', '.join(SECTIONS)}")
    p.add_argument("--sizes", default="", help="recall scoring sizes, e.g. 1000,10000,100000")
    p.add_argument(
        "--e2e-sizes",
        default="",
        help="end-to-end sizes, cache on and off at each (default 1000,10000; --quick: 300)",
    )
    p.add_argument(
        "--coldstart-baseline",
        default=os.environ.get("COLDSTART_BASELINE", ""),
        help="another checkout (e.g. `git worktree add ../base <commit>`): coldstart also measures its"
        " functions' imports in turn with this one's (before/after in one run)",
    )
    p.add_argument("--out", default=str(ROOT / ".bench" / "report.json"))
    return p.parse_args(argv)


def _ints(text: str, default: list[int]) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()] if text else default


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _section(
    section: str,
    quick: bool,
    sizes: list[int],
    e2e_sizes: list[int],
    baseline: str = "",
    done: dict[str, Any] | None = None,
) -> Any:
    if section == "scoring":
        from bench import scoring

        return scoring.run(sizes, repeat=5 if quick else 9, agreement_queries=10 if quick else 20, log=_log)
    elif section == "cost":
        from bench import cost

        return cost.run(sizes=[1000] if quick else [1000, 10_000], moto_n=200 if quick else 1000, log=_log)
    elif section == "overlap":
        from bench import handlers

        return handlers.overlap(runs=3 if quick else 7, log=_log)
    elif section == "coldstart":
        from bench import coldstart

        out = {"imports": coldstart.imports(log=_log), "layer": coldstart.layer_size(log=_log)}
        if baseline:
            out["against_baseline"] = coldstart.against(Path(baseline).resolve(), log=_log)
        return out
    elif section == "ingest":
        from bench import handlers

        return handlers.ingest(runs=3 if quick else 9, log=_log)
    elif section == "chatturn":
        from bench import chatturn

        return chatturn.run([1000] if quick else [1000, 10_000], repeat=5 if quick else 15, log=_log)
    elif section == "snapshot":
        from bench import snapshot

        return snapshot.run([1000, 5000] if quick else [10_000, 100_000], repeat=3 if quick else 5, log=_log)
    elif section == "fleet":
        from bench import fleet

        # the snapshot's costs as measured by the `snapshot` section of this run, if it ran
        measured = (done or {}).get("snapshot", {}).get("fleet_model")
        return fleet.run(quick, log=_log, measured=measured)
    elif section == "e2e":
        from bench import e2e

        return e2e.run(
            e2e_sizes,
            runs=10 if quick else 30,
            runs_off=2 if quick else 3,
            log=_log,
            loop_sizes=[300] if quick else [1000, 5000],
        )
    elif section == "throughput":
        from bench import e2e

        return e2e.throughput(per_client=8 if quick else 24, seed_n=50 if quick else 200, log=_log)
    elif section == "periods":
        from bench import periods

        return periods.run([300] if quick else [1000, 5000], rounds=5 if quick else 25, log=_log)
    elif section == "temporal":
        from bench import temporal

        return temporal.run_local(log=_log)
    elif section == "webhooks":
        from bench import webhooks

        return webhooks.run(quick, log=_log)
    raise SystemExit(f"unknown section {section!r}; one of {', '.join(SECTIONS)}")


def run(args: argparse.Namespace) -> dict[str, Any]:
    only = [s for s in args.only.split(",") if s] or list(SECTIONS)
    quick = args.quick
    sizes = _ints(args.sizes, [1000, 5000] if quick else [1000, 10_000, 100_000])
    e2e_sizes = _ints(args.e2e_sizes, [300] if quick else [1000, 10_000])
    report: dict[str, Any] = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {**machine(), "loadavg_start": [round(x, 2) for x in os.getloadavg()]},
        "mode": "quick" if quick else "full",
        "results": {},
        "seconds": {},
    }
    for section in only:
        _log(f"== {section}")
        t0 = time.perf_counter()
        try:
            result = _section(section, quick, sizes, e2e_sizes, args.coldstart_baseline, report["results"])
        except Exception as exc:  # one broken section must not lose the others' figures
            import traceback

            traceback.print_exc()
            result = {"error": f"{type(exc).__name__}: {exc}"}
        report["results"][section] = result
        _log(f"   {section}: {time.perf_counter() - t0:.1f} s")
        report["seconds"][section] = round(time.perf_counter() - t0, 1)
        report["machine"].setdefault("loadavg_after", {})[section] = round(os.getloadavg()[0], 2)
    report["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    from bench.report import checks

    report["checks"] = checks(report["results"])
    report["seconds"]["total"] = round(sum(report["seconds"].values()), 1)
    return report


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    report = run(args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    from bench.report import table

    print(table(report))
    print(f"\nreport: {out}   ({report['seconds']['total']} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
