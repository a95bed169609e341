"""8. A chat turn on warm containers: one POST /memory/recall, then one POST /memory/ingest of 2
messages, through the real handlers on moto. Read units and bytes are counted from the real size of
every item each read touched (DynamoDB charges a Query page, a GetItem or a BatchGetItem item on the
whole item, whatever the projection), against today's full reads (a full partition read by recall and
by ingest) computed from the same partition in the same run. And the corpus update after one write
at 10k against a full rebuild, in process."""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

import numpy as np

from bench.common import (
    RCU_BYTES,
    TABLE,
    USER,
    StubEmbedder,
    count_calls,
    item_size,
    moto_aws,
    patched,
    query_cost,
    summary,
)
from bench.handlers import StubExtractor, _call


class Reads:
    """Every read of the memory table made meanwhile: the keys each call touched, by call (the
    client's API calls are wrapped: the parameters and the parsed answer of each)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[tuple[str, str]]]] = []

    def wrap(self, client: Any) -> Any:
        original = client._make_api_call

        def call(name: str, params: dict[str, Any]) -> Any:
            parsed = original(name, params)
            self.record(name, params, parsed)
            return parsed

        client._make_api_call = call
        return original

    def record(self, name: str, params: dict[str, Any], parsed: dict[str, Any]) -> None:
        if name == "Query" and params.get("TableName") == TABLE:
            pk = params["ExpressionAttributeValues"][":pk"]["S"]
            self.calls.append((name, [(pk, i["sk"]["S"]) for i in parsed.get("Items", []) if "sk" in i]))
        elif name == "GetItem" and params.get("TableName") == TABLE:
            key = params["Key"]
            self.calls.append((name, [(key["pk"]["S"], key["sk"]["S"])]))
        elif name == "BatchGetItem":
            asked = params.get("RequestItems", {}).get(TABLE)
            if asked:
                pk = asked["Keys"][0]["pk"]["S"]
                items = (parsed.get("Responses") or {}).get(TABLE, [])
                self.calls.append((name, [(pk, i["sk"]["S"]) for i in items]))


def _full_sizes(ddb: Any, keys: list[tuple[str, str]]) -> list[int]:
    sizes = []
    for pk, sk in keys:
        item = ddb.get_item(TableName=TABLE, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True)
        sizes.append(item_size(item["Item"]) if "Item" in item else 0)
    return sizes


def _cost(ddb: Any, reads: Reads) -> dict[str, Any]:
    """Read units (strongly consistent: 4 KB each) and bytes of the reads, from full item sizes."""
    rcu = read_bytes = 0
    by_op: dict[str, int] = {}
    for name, keys in reads.calls:
        sizes = _full_sizes(ddb, keys)
        if name == "BatchGetItem":
            units = sum(max(1, math.ceil(s / RCU_BYTES)) for s in sizes)
        else:  # a Query page or a GetItem: its total, rounded up (at least one unit, even for nothing)
            units = max(1, math.ceil(sum(sizes) / RCU_BYTES))
        rcu += units
        read_bytes += sum(sizes)
        by_op[name] = by_op.get(name, 0) + units
    return {"rcu": rcu, "bytes": read_bytes, "rcu_by_operation": by_op, "calls": len(reads.calls)}


def turn(n: int, log: Any, *, snapshots: bool = True, repeat: int = 1) -> dict[str, Any]:
    """A warm chat turn at n memories (`repeat` turns: the read units of the first, the median time);
    `snapshots`: with the snapshot bucket (as deployed) or without."""
    from harness.lambdas import load_function
    from local import moto_speed
    from synapse.ai import embeddings, llm
    from synapse.store import db

    moto_speed.install()  # (moto's stock serializer takes minutes for a 10k partition)
    try:
        with moto_aws(**({} if snapshots else {"SNAPSHOT_BUCKET": None})) as ddb:
            rng = np.random.default_rng(5)
            from bench.common import seed_moto

            seed_moto(n, rng)
            recall_fn, ingest_fn = load_function("memory_recall"), load_function("memory_ingest")
            embedder, extractor = StubEmbedder(), StubExtractor()
            with (
                patched(embeddings, "get_embedder", lambda *_a, **_k: embedder),
                patched(llm, "get_extractor", lambda *_a, **_k: extractor),
            ):
                t0 = time.perf_counter()
                # warm both containers (recall's corpus, ingest's copy of the keys), a turn before
                _call(recall_fn, "POST", "/memory/recall", {"query": "what editor theme?", "limit": 5})
                _call(ingest_fn, "POST", "/memory/ingest", _turn_body(0))
                log(f"  chat turn n={n}: warmed in {time.perf_counter() - t0:.1f} s")
                reads = Reads()
                client = db.client()
                original = reads.wrap(client)
                with count_calls() as calls:
                    t1 = time.perf_counter()
                    _call(recall_fn, "POST", "/memory/recall", {"query": "where did I move?", "limit": 5})
                    _call(ingest_fn, "POST", "/memory/ingest", _turn_body(1))
                    samples = [(time.perf_counter() - t1) * 1000]
                client._make_api_call = original
                for r in range(2, repeat + 1):
                    t1 = time.perf_counter()
                    _call(recall_fn, "POST", "/memory/recall", {"query": "where did I move?", "limit": 5})
                    _call(ingest_fn, "POST", "/memory/ingest", _turn_body(r))
                    samples.append((time.perf_counter() - t1) * 1000)
                ms = statistics.median(samples)
            pair = _cost(ddb, reads)
            nuggets = [
                item_size(i)
                for page in ddb.get_paginator("query").paginate(
                    TableName=TABLE,
                    KeyConditionExpression="pk = :pk AND begins_with(sk, :n)",
                    ExpressionAttributeValues={":pk": {"S": f"mem:{USER}"}, ":n": {"S": "nug:"}},
                )
                for i in page["Items"]
            ]
            full = query_cost(nuggets)
            # today: recall after a write reads the whole partition, and so does every ingest
            baseline = {"rcu": 2 * full["rcu"], "bytes": 2 * full["bytes"]}
            out = {
                "n": n,
                "snapshots": snapshots,
                "calls": dict(sorted(calls.items())),
                "pair": pair,
                "pair_ms": round(ms, 1),
                "full_reads_baseline": baseline,
                "ratio_rcu": round(pair["rcu"] / baseline["rcu"], 5),
                "ratio_bytes": round(pair["bytes"] / baseline["bytes"], 5),
            }
            log(f"  chat turn n={n}: {pair['rcu']} RCU, {pair['bytes']} B vs {baseline}")
            return out
    finally:
        moto_speed.uninstall()


def _turn_body(i: int) -> dict[str, Any]:
    return {
        "sessionId": "chat",
        "messages": [
            {"role": "user", "content": f"I moved to Chiang Mai last month and I work at a cafe, turn {i}"},
            {"role": "assistant", "content": "Congratulations on the move!"},
        ],
    }


def corpus_update(n: int, repeat: int, log: Any) -> dict[str, Any]:
    """In process: one changed memory applied to a corpus of n (`corpus.apply`) vs today's rebuild
    (a new corpus from the full read's columns, tokens of unchanged memories reused) and a cold build."""
    from bench.common import i8s_items, unit_rows
    from synapse.search import corpus as corpora
    from synapse.store import changelog
    from synapse.store import nuggets as nuggets_store

    rng = np.random.default_rng(9)
    items = i8s_items(unit_rows(rng, n), with_key=True)
    key = f"{MODEL_KEY}"
    cols = nuggets_store.columns(items)
    base = corpora.build(cols, "a", key)
    at = changelog.Version("e", 2)
    changed_item = dict(items[n // 2])
    changed_item["content"] = {"S": "I moved to Chiang Mai and work at a cafe now"}

    def rebuild() -> Any:
        after = [*items[: n // 2], changed_item, *items[n // 2 + 1 :]]
        return corpora.build(nuggets_store.columns(after), "b", key, base)

    def cold() -> Any:
        return corpora.build(nuggets_store.columns(items), "c", key)

    applied: list[float] = []
    for _ in range(repeat):
        corpus = corpora.build(nuggets_store.columns(items), "a", key)
        one = nuggets_store.columns([changed_item])
        t0 = time.perf_counter()
        corpora.apply(corpus, one, one.ids, at)
        applied.append((time.perf_counter() - t0) * 1000)
    rebuilt: list[float] = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        rebuild()
        rebuilt.append((time.perf_counter() - t0) * 1000)
    colds: list[float] = []
    for _ in range(max(1, repeat // 2)):
        t0 = time.perf_counter()
        cold()
        colds.append((time.perf_counter() - t0) * 1000)
    out = {
        "n": n,
        "apply_one": summary(applied),
        "rebuild_after_one_write": summary(rebuilt),
        "cold_build": summary(colds),
    }
    out["ratio"] = round(out["apply_one"]["median_ms"] / out["rebuild_after_one_write"]["median_ms"], 4)
    apply_ms, rebuild_ms = out["apply_one"]["median_ms"], out["rebuild_after_one_write"]["median_ms"]
    log(f"  corpus update n={n}: apply {apply_ms} ms vs rebuild {rebuild_ms} ms")
    return out


MODEL_KEY = "bench/768"


def run(sizes: list[int], repeat: int, log: Any) -> dict[str, Any]:
    return {
        "turns": [turn(n, log) for n in sizes],
        "corpus_update": corpus_update(max(sizes), repeat, log),
    }
