"""1. Recall scoring: cold (query pages → top-10), warm (cached corpus), botocore's page parsing,
against a number-list + Python-loop baseline; and top-10 agreement of int8/prefix vs exact cosine."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import numpy as np

from bench.common import (
    DIM,
    MODEL,
    PAGE_LIMIT,
    baseline_top_k,
    i8s_items,
    item_size,
    nugget_item,
    number_list,
    timed,
    unit_rows,
)

K = 10
CANDIDATES = 200  # what recall asks dense_scores for at limit ≤ 10
BASELINE_MAX_MEASURED = 10_000  # above this the baseline is extrapolated linearly


def top10(scores: np.ndarray) -> np.ndarray:
    best = np.argpartition(-scores, K)[:K] if len(scores) > K else np.arange(len(scores))
    return best[np.argsort(-scores[best], kind="stable")]


def vector_corpus(items: list[dict[str, Any]]) -> Any:
    """The vector part of recall's corpus, by the service's own code (no prefix: a cold load)."""
    from synapse.search import vectors
    from synapse.store import nuggets

    return vectors.index(nuggets.vectors_of(items), f"{MODEL}/{DIM}")


def cold_vector_path(items: list[dict[str, Any]], q: np.ndarray) -> np.ndarray:
    from synapse.search import vectors

    found = vector_corpus(items)
    rows: np.ndarray = found.rows[top10(vectors.dense_scores(found, q, CANDIDATES))]
    return rows


def wire_page(items: list[dict[str, Any]]) -> bytes:
    """A Query response body as DynamoDB sends it (binary attributes base64)."""

    def enc(attr: dict[str, Any]) -> Any:
        ((kind, value),) = attr.items()
        if kind == "B":
            return {"B": base64.b64encode(value).decode()}
        if kind == "L":
            return {"L": [enc(v) for v in value]}
        return attr

    wire = [{k: enc(v) for k, v in item.items()} for item in items]
    last = {"pk": {"S": "mem:alice"}, "sk": items[-1]["sk"]}
    return json.dumps(
        {"Count": len(wire), "ScannedCount": len(wire), "Items": wire, "LastEvaluatedKey": last}
    ).encode()


def parse_pages_ms(n: int, vectors: np.ndarray, repeat: int) -> dict[str, Any]:
    """The service's parser (`synapse.aws.clients.ItemParser`) on ~1 MB Query pages holding n items (one page
    body, parsed n/page times), against botocore's own JSON parser and plain `json.loads`."""
    import botocore.session
    from botocore.parsers import create_parser

    from synapse.aws import clients as aws
    from synapse.store import codec

    sess = botocore.session.get_session()
    shape = sess.get_service_model("dynamodb").operation_model("Query").output_shape
    full = [
        nugget_item(i, {"B": codec.make_vector(vectors[i % len(vectors)], MODEL).data}, with_key=True)
        for i in range(2000)
    ]
    per_item = item_size(full[0])
    per_page = max(1, PAGE_LIMIT // per_item)
    body = wire_page(
        [
            nugget_item(i, {"B": codec.make_vector(vectors[i % len(vectors)], MODEL).data})
            for i in range(per_page)
        ]
    )
    pages, rest = divmod(n, per_page)
    tail = (
        wire_page([nugget_item(i, {"B": codec.make_vector(vectors[i], MODEL).data}) for i in range(rest)])
        if rest
        else None
    )

    def parse_all(parser: Any) -> None:
        for _ in range(pages):
            parser.parse({"body": body, "headers": {}, "status_code": 200}, shape)
        if tail is not None:
            parser.parse({"body": tail, "headers": {}, "status_code": 200}, shape)

    def plain_json() -> None:  # for comparison: the same pages with json.loads, vectors base64-decoded
        for page in [body] * pages + ([tail] if tail is not None else []):
            for item in json.loads(page)["Items"]:
                item["emb"]["B"] = base64.b64decode(item["emb"]["B"])

    warmup = 0 if n >= 50_000 else 1
    t = timed(lambda: parse_all(aws.ItemParser()), repeat=repeat, warmup=warmup)
    stock = timed(lambda: parse_all(create_parser("json")), repeat=repeat, warmup=warmup)
    plain = timed(plain_json, repeat=repeat, warmup=0)
    return {
        "items_per_page": per_page,
        "pages": pages + (1 if rest else 0),
        "page_bytes": len(body),
        **t,
        "botocore_parser_ms": stock["median_ms"],
        "json_loads_b64_ms": plain["median_ms"],
    }


def agreement(rng: np.random.Generator, n: int, decay: bool, queries: int) -> dict[str, Any]:
    """Mean |top-10 of the warm path (int8, and the prefix first pass when used) ∩ top-10 of exact
    float32 cosine| / 10, and the warm path's time on these vectors. The cold path scores the int8
    matrix exactly (no prefix)."""
    from synapse.search import vectors

    data = unit_rows(rng, n, decay=decay)
    items = i8s_items(data)
    # the warm path: what a cached corpus is scored with (a prefix first pass on large corpora,
    # if the self-check finds it ranks like the full vectors)
    found = vectors.with_prefix(vector_corpus(items))
    q0 = unit_rows(rng, 1, decay=decay)[0]
    warm = timed(lambda: found.rows[top10(vectors.dense_scores(found, q0, CANDIDATES))], repeat=20)
    total, n_q = 0.0, 0
    for _ in range(queries):
        # a query near a stored vector (cosine ≈ 0.7 with it), as a real query is near its answers
        j = int(rng.integers(n))
        noise = unit_rows(rng, 1, decay=decay)[0]
        q = data[j] + noise
        q /= np.linalg.norm(q)
        exact = top10(data @ q)
        approx = found.rows[top10(vectors.dense_scores(found, q, CANDIDATES))]
        total += len(set(exact.tolist()) & set(approx.tolist())) / K
        n_q += 1
    return {
        "recall_at_10": round(total / n_q, 4),
        "queries": n_q,
        "prefix_first_pass": found.prefix is not None,
        "prefix_refused": bool(found.prefix_refused),
        "warm_ms": warm["median_ms"],
    }


def run(sizes: list[int], repeat: int, agreement_queries: int, log: Any) -> dict[str, Any]:
    from synapse.search import corpus as corpora
    from synapse.search import vectors
    from synapse.store import nuggets

    rng = np.random.default_rng(7)
    out: dict[str, Any] = {"sizes": {}}
    baseline_per_item_ms = None
    for n in sizes:
        log(f"  scoring n={n}")
        # vectors like Gemini's (Matryoshka-trained: the first dims carry most of the signal); the
        # agreement section below also times the warm path on isotropic vectors
        data = unit_rows(rng, n, decay=True)
        q = unit_rows(rng, 1, decay=True)[0]
        items = i8s_items(data)
        reps = repeat if n < 50_000 else max(3, repeat // 3)
        row: dict[str, Any] = {}
        row["cold_vector_ms"] = timed(lambda items=items, q=q: cold_vector_path(items, q), repeat=reps)
        t0 = time.perf_counter()
        corpus = corpora.build(nuggets.columns(items), "v", f"{MODEL}/{DIM}")
        row["build_corpus_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        # the rebuild after one write: the cached corpus lends the tokens of unchanged memories
        edited = [{**items[0], "content": {"S": items[0]["content"]["S"] + " (edited)"}}, *items[1:]]
        t0 = time.perf_counter()
        corpora.build(nuggets.columns(edited), "v2", f"{MODEL}/{DIM}", previous=corpus)
        row["rebuild_after_write_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        del edited
        # warm = a corpus reused from the cache: cache.load adds the prefix matrix on reuse
        t0 = time.perf_counter()
        found = vectors.with_prefix(corpus.vectors)
        row["prefix_on_reuse_ms"] = round((time.perf_counter() - t0) * 1000, 1)

        def warm(found: Any = found, q: np.ndarray = q) -> np.ndarray:
            return found.rows[top10(vectors.dense_scores(found, q, CANDIDATES))]

        row["warm_ms"] = timed(warm, repeat=max(reps, 20))
        # correctness of the fast path against exact cosine on the same data
        exact = top10(data @ q)
        row["top10_overlap_this_query"] = len(set(exact.tolist()) & set(warm().tolist())) / K
        row["parse_pages"] = parse_pages_ms(n, data, repeat=1 if n >= 50_000 else 3)
        # baseline: number lists, Python loop
        if n <= BASELINE_MAX_MEASURED:
            pool = min(n, 256)  # the number-list dicts of `pool` vectors, shared (memory), same work
            lists = [number_list(data[i]) for i in range(pool)]
            base_items = [nugget_item(i, lists[i % pool]) for i in range(n)]
            t0 = time.perf_counter()
            baseline_top_k(base_items, q.tolist(), K)
            ms = (time.perf_counter() - t0) * 1000
            baseline_per_item_ms = ms / n
            row["baseline_ms"] = round(ms, 1)
            row["baseline_measured"] = True
            del base_items, lists
        else:
            assert baseline_per_item_ms is not None
            row["baseline_ms"] = round(baseline_per_item_ms * n, 1)
            row["baseline_measured"] = False
        row["speedup_cold_vs_baseline"] = round(row["baseline_ms"] / row["cold_vector_ms"]["median_ms"], 1)
        row["speedup_warm_vs_baseline"] = round(row["baseline_ms"] / row["warm_ms"]["median_ms"], 1)
        out["sizes"][str(n)] = row
        del items, corpus, found, data
    out["agreement"] = {}
    for n in sizes:
        log(f"  agreement n={n}")
        out["agreement"][str(n)] = {
            "isotropic": agreement(rng, n, decay=False, queries=agreement_queries),
            "decaying_variance": agreement(rng, n, decay=True, queries=agreement_queries),
        }
    return out
