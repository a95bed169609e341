"""make bench's local-server throughput figure: the pool beside LOCAL_CONCURRENCY=1, judged and printed."""

from __future__ import annotations

from typing import Any

from bench.report import checks, markdown, table


def _run(rps: float, p50: float, p95: float) -> dict[str, Any]:
    return {"requests_per_s": rps, "p50_ms": p50, "p95_ms": p95, "n": 192, "failed": 0, "seconds": 9.0}


def _results(gemini_speedup: float) -> dict[str, Any]:
    return {
        "throughput": {
            "clients": 8,
            "mix": "3 recalls : 1 write",
            "gemini_latency_ms": 150,
            "scenarios": {
                "offline": {
                    "runs": {"one_at_a_time": _run(40, 170, 400), "pool": _run(30, 250, 500)},
                    "speedup": 0.75,
                },
                "gemini": {
                    "runs": {
                        "one_at_a_time": _run(6.0, 1500.4, 1700),
                        "pool": _run(6.0 * gemini_speedup, 380, 620),
                    },
                    "speedup": gemini_speedup,
                },
            },
        }
    }


def test_the_throughput_rows_show_both_figures_and_judge_the_model_wait_case() -> None:
    rows = checks(_results(3.0))
    assert len(rows) == 2
    offline, gemini = rows
    assert (
        offline["pass"] is None
        and offline["baseline"] == "LOCAL_CONCURRENCY=1: 40 req/s, p50 170 / p95 400 ms"
    )
    assert gemini["pass"] is True and gemini["value"] == "18.0 req/s, p50 380 / p95 620 ms"
    assert "8 clients" in gemini["figure"] and "150 ms" in gemini["figure"]
    assert checks(_results(1.2))[1]["pass"] is False
    report = {
        "machine": {
            "nproc": 2,
            "cpu": "c",
            "python": "3.13",
            "numpy": "2",
            "loadavg_start": [1],
            "loadavg_end": [1],
        },
        "checks": rows,
    }
    assert "LOCAL_CONCURRENCY=4" in table(report) and "LOCAL_CONCURRENCY=1" in markdown(report)
