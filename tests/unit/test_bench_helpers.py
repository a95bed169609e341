"""Smoke tests of the measuring helpers of `python -m bench` (fast: no moto, no server)."""

from __future__ import annotations

import numpy as np
import pytest

from bench import common, scoring
from bench.report import checks, markdown, table


def test_number_sizes_follow_dynamodbs_rule() -> None:
    assert common.number_size("0") == 1
    assert common.number_size("0.7") == 2  # one significant digit
    assert common.number_size("123456") == 4  # six digits: 3 bytes + 1
    assert common.number_size("-0.0012345") == 4  # five significant digits, sign and zeros free
    assert common.number_size("1000") == 2  # trailing zeros are not significant


def test_item_size_counts_names_and_values() -> None:
    item = {
        "pk": {"S": "mem:ä"},  # 2 + 6 (ä is two bytes in UTF-8)
        "emb": {"B": b"\x00" * 772},  # 3 + 772
        "ok": {"BOOL": True},  # 2 + 1
        "tags": {"L": [{"S": "ab"}, {"S": "c"}]},  # 4 + 3 + (1 + 2) + (1 + 1)
        "n": {"N": "768"},  # 1 + 3
    }
    assert common.item_size(item) == 8 + 775 + 3 + 12 + 4


def test_query_cost_pages_and_read_units() -> None:
    one = common.query_cost([100])
    assert one == {"bytes": 100, "pages": 1, "rcu": 1}
    # 4 KB per read unit, rounded up per page; a page holds at most 1 MB
    sizes = [1000] * 2000  # 2 MB → 2 pages
    cost = common.query_cost(sizes)
    assert cost["pages"] == 2
    assert cost["rcu"] == sum(-(-p // 4096) for p in (1048000, 952000))
    assert common.query_cost([])["rcu"] == 1  # an empty query still costs a read unit


def test_baseline_scorer_matches_exact_cosine() -> None:
    rng = np.random.default_rng(0)
    vectors = common.unit_rows(rng, 300, dim=32)
    q = common.unit_rows(rng, 1, dim=32)[0]
    items = [common.nugget_item(i, common.number_list(v)) for i, v in enumerate(vectors)]
    expected = np.argsort(-(vectors @ q))[:10].tolist()
    assert common.baseline_top_k(items, q.tolist(), 10) == expected


def test_int8_path_agrees_with_exact_on_small_data() -> None:
    rng = np.random.default_rng(1)
    vectors = common.unit_rows(rng, 500)
    q = vectors[7] + 0.5 * common.unit_rows(rng, 1)[0]
    got = scoring.cold_vector_path(common.i8s_items(vectors), q / np.linalg.norm(q))
    exact = scoring.top10(vectors @ q)
    assert len(set(got.tolist()) & set(exact.tolist())) >= 9
    assert got[0] == 7


def test_decaying_vectors_are_unit_and_front_loaded() -> None:
    m = common.unit_rows(np.random.default_rng(2), 200, decay=True)
    assert np.allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-5)
    energy = (m**2).mean(axis=0)
    assert energy[:256].sum() > 0.8


def test_stub_embedder_is_deterministic_and_counts() -> None:
    e = common.StubEmbedder()
    a, b = e.embed_query("x"), e.embed_query("x")
    assert np.array_equal(a, b) and a.shape == (768,)
    assert np.isclose(np.linalg.norm(a), 1.0, atol=1e-5)
    assert e.embed_documents(["x", "y"]).shape == (2, 768)
    assert (e.query_calls, e.document_calls) == (2, 1)


def test_percentile_and_summary() -> None:
    assert common.percentile([5, 1, 3, 2, 4], 50) == 3
    assert common.percentile(list(range(1, 101)), 95) == 95
    s = common.summary([3.0, 1.0, 2.0])
    assert s["median_ms"] == 2.0 and s["min_ms"] == 1.0 and s["n"] == 3


def test_wire_page_round_trips_through_botocore() -> None:
    import botocore.session
    from botocore.parsers import create_parser

    items = common.i8s_items(common.unit_rows(np.random.default_rng(3), 3))
    shape = botocore.session.get_session().get_service_model("dynamodb").operation_model("Query").output_shape
    parsed = create_parser("json").parse(
        {"body": scoring.wire_page(items), "headers": {}, "status_code": 200}, shape
    )
    assert parsed["Items"][1]["emb"]["B"] == items[1]["emb"]["B"]


@pytest.mark.parametrize("failed", [False, True])
def test_report_table_renders(failed: bool) -> None:
    results = {
        "ingest": {"error": "RuntimeError: boom"}
        if failed
        else {
            "latency": {"median_ms": 12.0},
            "requests_median": {"dynamodb.BatchWriteItem": 1, "events.PutEvents": 1},
            "model_calls_max": {"extraction": 1, "embedding_batches": 1},
        }
    }
    rows = checks(results)
    assert any(r["pass"] is (not failed) for r in rows)
    report = {
        "machine": {
            "nproc": 2,
            "cpu": "cpu",
            "python": "3.13",
            "numpy": "2",
            "loadavg_start": [1.0],
            "loadavg_end": [1.0],
        },
        "checks": rows,
    }
    assert "ingest" in table(report)
    assert markdown(report).startswith("| figure")


def test_import_rows_judge_the_bare_figure_and_show_the_runtime_one() -> None:
    fn = {
        "import_ms": 320.0,
        "import_ms_after_runtime": 280.0,
        "google_genai_imported": False,
        "calls_a_model": False,
        "heaviest_ms": {"botocore": 90.0},
        "pass": False,
    }
    results = {
        "coldstart": {
            "imports": {
                "stack_floor_ms": 270.0,
                "stack_floor_ms_after_runtime": 240.0,
                "functions": {"health": fn},
            },
            "layer": {"unzipped_mb": 150.0, "largest_mb": {"numpy": 40.0}},
        }
    }
    rows = {r["figure"]: r for r in checks(results)}
    row = rows["import health"]
    assert row["pass"] is False  # 280 ms after the runtime's imports does not make it pass
    assert row["value"] == "320.0 ms"
    assert "after the runtime's imports 280.0 ms" in row["note"]
    assert "after the runtime's imports 240.0 ms" in rows["import floor of the stack"]["baseline"]


def test_import_rows_judge_the_excess_over_the_floor_of_the_same_run() -> None:
    from bench.coldstart import judge

    row = {
        "import_ms": 380.0,
        "import_cpu_ms": 370.0,
        "floor_cpu_ms": 325.0,
        "excess_cpu_ms": 40.0,
        "excess_ms": 47.0,
        "heavy_imported": [],
        "google_genai_imported": False,
        "calls_a_model": False,
        "judged": True,
        "heaviest_ms": {"botocore": 90.0},
        "pass": judge("health", 40.0, []),
    }
    model = {**row, "calls_a_model": True, "judged": False, "excess_cpu_ms": 140.0, "pass": None}
    results = {
        "coldstart": {
            "imports": {
                "stack_floor_ms": 330.0,
                "stack_floor_cpu_ms": 325.0,
                "excess_limit_ms": 50.0,
                "functions": {"health": row, "memory_recall": model},
            },
            "layer": {"unzipped_mb": 150.0, "largest_mb": {"numpy": 40.0}},
        }
    }
    rows = {r["figure"]: r for r in checks(results)}
    assert rows["import health"]["pass"] is True
    assert rows["import health"]["value"] == "+40.0 ms CPU"
    assert rows["import memory_recall"]["pass"] is None  # a model function is reported, not judged
    assert rows["import floor of the stack"]["value"] == "median 325.0 ms CPU / 330.0 ms wall"
    assert "after the floor (325.0 ms CPU)" in rows["import health"]["baseline"]
    assert "alone 370.0 ms CPU" in rows["import health"]["note"]
    assert judge("health", 50.1, []) is False
    assert judge("health", 10.0, ["numpy"]) is False  # a heavy package at init fails whatever the time
    assert judge("docs", 900.0, []) is None
