"""3. Latency overlap through the memory_recall handler, and 5. ingest through memory_ingest (moto)."""

from __future__ import annotations

import copy
import json
import statistics
import time
from typing import Any

import numpy as np

from bench.common import (
    ALICE_WHO,
    StubEmbedder,
    count_calls,
    moto_aws,
    patched,
    seed_moto,
    summary,
)

EMBED_DELAY = 0.200
QUERY_DELAY = 0.080


def _call(module: Any, method: str, path: str, body: Any) -> dict[str, Any]:
    from harness.lambdas import LambdaContext, http_event

    answer: dict[str, Any] = module.handler(
        http_event(method, path, body=body, who=ALICE_WHO), LambdaContext()
    )
    if answer.get("statusCode", 500) >= 300:
        raise RuntimeError(f"{path}: {answer.get('statusCode')} {answer.get('body', '')[:300]}")
    return answer


def overlap(runs: int, log: Any) -> dict[str, Any]:
    """Recall with the embedding delayed 200 ms and every Query delayed 80 ms: ≈ max, not the sum."""
    from harness.lambdas import load_function

    out: dict[str, Any] = {}
    with moto_aws():
        seed_moto(200, np.random.default_rng(3))
        fn = load_function("memory_recall")
        for delayed in (False, True):
            out["delayed" if delayed else "undelayed"] = _overlap_runs(fn, delayed, runs)
    base = out["undelayed"]["median_ms"]
    q = out["delayed"]["queries_per_recall"] * QUERY_DELAY * 1000
    out["embed_ms"] = EMBED_DELAY * 1000
    out["query_delay_ms_total"] = q
    out["sum_model_ms"] = round(EMBED_DELAY * 1000 + q + base, 1)  # strictly sequential
    out["max_model_ms"] = round(max(EMBED_DELAY * 1000, q + base), 1)  # perfect overlap
    log(f"  overlap: {out['delayed']['median_ms']} ms (sum {out['sum_model_ms']}, max {out['max_model_ms']})")
    return out


def _overlap_runs(fn: Any, delayed: bool, runs: int) -> dict[str, Any]:
    from synapse.ai import embeddings
    from synapse.search import cache
    from synapse.store import db

    body = {"query": "which editor theme does the user like", "limit": 5}
    embedder = StubEmbedder(query_delay=EMBED_DELAY if delayed else 0.0)
    ddb = db.client()
    canned: dict[str, Any] = {}

    def capture(http_response: Any = None, parsed: Any = None, **_: Any) -> None:
        canned.setdefault("answer", (http_response, copy.deepcopy(parsed)))

    def slow_query(**_: Any) -> Any:
        # moto's own response serializer costs ~15 ms per item here, which would swamp the
        # delays: the Query is answered from a capture of moto's answer, after 80 ms
        if delayed:
            time.sleep(QUERY_DELAY)
        if "answer" in canned:
            http, parsed = canned["answer"]
            return http, copy.deepcopy(parsed)
        return None

    ddb.meta.events.register("before-call.dynamodb.Query", slow_query)
    ddb.meta.events.register("after-call.dynamodb.Query", capture)
    samples, queries = [], 0
    try:
        with patched(embeddings, "get_embedder", lambda *_a, **_k: embedder):
            _call(fn, "POST", "/memory/recall", body)  # imports, pools, first client use
            for _ in range(runs):
                cache.CACHE.clear()  # every recall cold (a new container): the partition Query happens
                with count_calls() as calls:
                    t0 = time.perf_counter()
                    _call(fn, "POST", "/memory/recall", body)
                    samples.append((time.perf_counter() - t0) * 1000)
                queries = calls.get("dynamodb.Query", 0)
    finally:
        ddb.meta.events.unregister("before-call.dynamodb.Query", slow_query)
        ddb.meta.events.unregister("after-call.dynamodb.Query", capture)
    return {**summary(samples), "queries_per_recall": queries}


class StubExtractor:
    """Five nuggets per call, from the messages' text; counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def extract(self, messages: Any, existing: Any = (), *, timezone: str = "UTC") -> list[Any]:
        from synapse.ai.llm import ExtractedNugget
        from synapse.core.models.base import Category

        self.calls += 1
        users = [m for m in messages if m.role.value == "user"]
        cats = (Category.fact, Category.preference, Category.project, Category.context, Category.identity)
        return [
            ExtractedNugget(
                category=cats[i % 5], key=f"k_{abs(hash(m.content)) % 10**9}", content=m.content[:200]
            )
            for i, m in enumerate(users[:5])
        ]


def ingest(runs: int, log: Any) -> dict[str, Any]:
    """Per ingest of 10 messages: model calls, AWS requests by operation, latency (stub Gemini)."""
    from harness.lambdas import load_function
    from synapse.ai import embeddings, llm

    with moto_aws():
        # no seeded nuggets: ingest reads the user's keys, and moto's serializer costs ~15 ms an item
        fn = load_function("memory_ingest")
        samples: list[float] = []
        per_run: list[dict[str, int]] = []
        model_calls: list[dict[str, int]] = []
        for r in range(runs + 1):
            embedder, extractor = StubEmbedder(), StubExtractor()
            messages = [
                {
                    "role": "user" if i % 2 == 0 else "assistant",
                    "content": f"run {r} turn {i}: my garden project moved to the river house {r * 100 + i}",
                }
                for i in range(10)
            ]
            body = {"sessionId": f"bench-{r}", "messages": messages}
            with (
                patched(embeddings, "get_embedder", lambda *_a, e=embedder, **_k: e),
                patched(llm, "get_extractor", lambda *_a, x=extractor, **_k: x),
                count_calls() as calls,
            ):
                t0 = time.perf_counter()
                answer = _call(fn, "POST", "/memory/ingest", body)
                ms = (time.perf_counter() - t0) * 1000
            if r == 0:
                continue  # the first call pays the imports
            samples.append(ms)
            per_run.append(dict(calls))
            model_calls.append(
                {
                    "extraction": extractor.calls,
                    "embedding_batches": embedder.document_calls,
                    "embedding_queries": embedder.query_calls,
                    "nuggets": len(json.loads(answer["body"])["nuggets"]),
                }
            )
    ops = sorted({k for c in per_run for k in c})
    out = {
        "latency": summary(samples),
        "requests_median": {k: statistics.median(c.get(k, 0) for c in per_run) for k in ops},
        "model_calls_max": {k: max(m[k] for m in model_calls) for k in model_calls[0]},
    }
    log(f"  ingest: {out['latency']['median_ms']} ms, {out['model_calls_max']}")
    return out
