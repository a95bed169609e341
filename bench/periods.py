"""Recall latency with the Time issue's period logic, against the code path before it, in one run.

Through the `memory_recall` handler (moto, a stub embedder with no delay, the mind's corpus warm in the
container, as a chat's second turn finds it), over N memories dated across a year:

- "before": `recall.recall` replaced by the function as it was before the Time issue (commit
  d40bdf7, `recall_before` below: no period is looked for, the query ranked as asked);
- "now": the service as it is, on the same queries.

Queries without a period (Thai and English) measure what every recall now pays (reading the query for
a time expression); queries with one ("last week", "เมื่อวาน", "in March") what a period costs (the
mind's timezone is given in the body, as a client that knows it sends it). The two code paths are
interleaved query by query, so that the machine's load falls on both alike. Targets (the issue):
without a period ≤ 1.1× before, with one ≤ 1.2×.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from bench.common import ALICE_WHO, USER, StubEmbedder, moto_aws, patched, seed_moto, summary

NO_PERIOD = [
    "which editor theme does the user like",
    "rust payments service deadline",
    "a dog named mango who likes long walks",
    "ผมชอบกินอะไร",
    "อยู่ที่เชียงใหม่กับครอบครัว",
    "May I ask about the project meeting notes",
]
WITH_PERIOD = [
    "what did I do last week",
    "rust payments service in March",
    "walks with mango yesterday",
    "เมื่อวานไปไหนมา",
    "สัปดาห์ที่แล้วทำอะไรบ้าง",
    "เดือนมีนาคมไปเที่ยวที่ไหน",
]
TARGET_NO_PERIOD = 1.1
TARGET_WITH_PERIOD = 1.2


def recall_before(who: Any, mind: Any, body: Any) -> Any:
    """POST /memory/recall as it was before the Time issue (commit d40bdf7), for the baseline."""
    from synapse.ai.embeddings import get_embedder
    from synapse.core.models.base import utcnow
    from synapse.core.models.chat import RecallOut
    from synapse.search import cache, scoring
    from synapse.services.account.providers import gemini_key_for
    from synapse.services.memory import recall
    from synapse.services.memory.identity import current as current_identity

    who.check_user_id(body.userId)
    space = mind.space
    embedder = get_embedder(gemini_key_for(space.user_id))
    query_vec: Future[np.ndarray] | None = None
    model_key = None
    if embedder is not None:
        query_vec = recall._pool().submit(embedder.embed_query, body.query)
        model_key = f"{embedder.model}/{embedder.dim}"
    identity = recall._pool().submit(current_identity, space)
    corpus = cache.load(space, model_key)
    now = utcnow().timestamp()
    dense = None
    if query_vec is not None:
        dense = scoring.similarity(corpus, query_vec.result(), candidates=max(200, 20 * body.limit))
    answer = RecallOut(memories=[], identity=identity.result())
    category = body.category.value if body.category is not None else None
    mask = scoring.live(corpus, now, category, body.tags)
    best = scoring.best(corpus, body.query, dense, mask, now, body.limit)
    answer.memories = [recall._recalled(corpus, i, score) for i, score in best]
    return answer


def _date_memories(n: int) -> None:
    """Give the seeded memories a valid_at each, spread over the year before now (UpdateItem, as a
    write would store it; then the mind's version steps)."""
    from synapse.store import changelog, db
    from synapse.store.keys import NUGGET, Space

    now = datetime.now(UTC)
    space = Space(USER)
    items = list(db.query_prefix(space.pk, space.sk(NUGGET), ProjectionExpression="pk, sk"))
    for k, item in enumerate(items):
        when = now - timedelta(days=365 * k / max(n, 1))
        db.client().update_item(
            TableName=db.table(),
            Key={"pk": item["pk"], "sk": item["sk"]},
            UpdateExpression="SET valid_at = :v",
            ExpressionAttributeValues={":v": {"S": when.strftime("%Y-%m-%dT%H:%M:%SZ")}},
        )
    changelog.transact(changelog.step(space, changelog.read(space), []))


ASKED = "2026-12-03T10:00:00Z"


def _one_size(n: int, rounds: int) -> dict[str, Any]:
    from harness.lambdas import LambdaContext, http_event, load_function
    from synapse.ai import embeddings
    from synapse.services.memory import recall

    with moto_aws():
        seed_moto(n, np.random.default_rng(11))
        _date_memories(n)
        fn = load_function("memory_recall")
        embedder = StubEmbedder()

        def call(query: str, timed: bool) -> float:
            body: dict[str, Any] = {"query": query, "limit": 5}
            if timed:
                body.update(reference_time=ASKED, timezone="Asia/Bangkok")
            event = http_event("POST", "/memory/recall", body=body, who=ALICE_WHO)
            t0 = time.perf_counter()
            answer = fn.handler(event, LambdaContext())
            ms = (time.perf_counter() - t0) * 1000
            if answer["statusCode"] != 200:
                raise RuntimeError(answer["body"][:300])
            return ms

        samples: dict[str, list[float]] = {k: [] for k in ("before", "now", "before_p", "now_p")}
        with patched(embeddings, "get_embedder", lambda *_a, **_k: embedder):
            for warm in (*NO_PERIOD, *WITH_PERIOD):  # the corpus read, imports, the regexes compiled
                call(warm, True)
            for _ in range(rounds):
                for q in NO_PERIOD:
                    with patched(recall, "recall", recall_before):
                        samples["before"].append(call(q, False))
                    samples["now"].append(call(q, False))
                for q in WITH_PERIOD:
                    with patched(recall, "recall", recall_before):
                        samples["before_p"].append(call(q, True))
                    samples["now_p"].append(call(q, True))
    row: dict[str, Any] = {k: summary(v) for k, v in samples.items()}
    row["ratio_no_period"] = round(row["now"]["median_ms"] / row["before"]["median_ms"], 3)
    row["ratio_with_period"] = round(row["now_p"]["median_ms"] / row["before_p"]["median_ms"], 3)
    return row


def run(sizes: list[int], rounds: int, log: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"sizes": {}}
    for n in sizes:
        log(f"  periods n={n}")
        row = _one_size(n, rounds)
        log(f"    no period {row['ratio_no_period']}×, with a period {row['ratio_with_period']}×")
        out["sizes"][str(n)] = row
    out["targets"] = {"no_period": TARGET_NO_PERIOD, "with_period": TARGET_WITH_PERIOD}
    return out
