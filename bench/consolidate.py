"""Consolidation of a 10k-memory mind within one Lambda invocation (Review), measured through moto.

    .venv/bin/python -m bench.consolidate            # 10,000 memories
    .venv/bin/python -m bench.consolidate --n 2000

The mind: 40% unverified low-priority memories untouched for 40 days (summarized), 10% pairs of
duplicates (merged), a third verified (left alone), the rest recent. The figure is the wall time of
`consolidate(space)` and its DynamoDB calls, beside the same run's full read of the mind (the floor
any consolidation pays), so the ratio holds on another machine; moto's per-call cost is not
DynamoDB's, so the calls are printed too: at ~10-30 ms a transaction on DynamoDB, the time there is
about transactions x that.
"""

from __future__ import annotations

import argparse
import time
from datetime import timedelta

from bench.common import USER, content_text, count_calls, moto_aws


def seed(n: int) -> None:
    from synapse.core.models.base import iso, utcnow
    from synapse.store import changelog, db
    from synapse.store.keys import Space, memory_id

    old = iso(utcnow() - timedelta(days=40))
    new = iso(utcnow())
    items = []
    for i in range(n):
        category = ("fact", "context", "project", "note")[i % 4]
        low = i % 10 < 4
        dup = i % 10 == 4
        content = f"duplicate fact number {i // 20}" if dup else content_text(i, 120)
        items.append(
            {
                "pk": {"S": f"mem:{USER}"},
                "sk": {"S": f"nug:{memory_id(Space(USER), category, f'k{i}')}"},
                "category": {"S": category},
                "key": {"S": f"k{i}"},
                "content": {"S": content},
                "tags": {"L": [{"S": f"t{i % 30}"}]},
                "priority": {"S": "low" if low else "normal"},
                "source": {"S": "agent" if i % 3 else "user"},
                "verified": {"BOOL": i % 3 == 0},
                "confidence": {"N": "0.7"},
                "created_at": {"S": old},
                "updated_at": {"S": old if low else new},
                "rev": {"N": "1"},
            }
        )
    db.batch_write([{"PutRequest": {"Item": item}} for item in items])
    space = Space(USER)
    changelog.transact(changelog.step(space, changelog.read(space), []))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.consolidate")
    parser.add_argument("--n", type=int, default=10_000)
    n = parser.parse_args().n
    with moto_aws():
        from synapse.services.memory import consolidate
        from synapse.store import nuggets
        from synapse.store.keys import Space

        seed(n)
        space = Space(USER)
        started = time.perf_counter()
        nuggets.stored(space)
        read = time.perf_counter() - started
        with count_calls() as calls:
            started = time.perf_counter()
            out = consolidate.consolidate(space)
            took = time.perf_counter() - started
        transactions = calls.get("dynamodb.TransactWriteItems", 0)
        print(f"memories: {n}")
        print(f"consolidated: {out.consolidated}, merged: {out.merged}, summaries: {len(out.created)}")
        print(
            f"full read of the mind: {read:.2f} s; consolidation: {took:.2f} s ({took / read:.1f}x the read)"
        )
        print(f"DynamoDB calls: {dict(sorted(calls.items()))}")
        print(
            f"Lambda's limit is 900 s; DynamoDB at 30 ms a transaction: ~{transactions * 0.03 + read:.0f} s"
        )


if __name__ == "__main__":
    main()
