"""Consolidation of a 10k-memory mind within one Lambda invocation (Review).

    .venv/bin/python -m bench.consolidate            # 10,000 memories
    .venv/bin/python -m bench.consolidate --n 2000

A consolidation is one read of the mind, the plan (grouping, the extractive summaries: CPU only),
and its writes, BATCH memories a transaction. The plan is timed here on the real code over 10k
memories in memory, beside the same run's decoding of the mind's items (`from_item`, which the read
pays anyway): the ratio holds on another machine. The I/O is counted, not timed: moto's
transactions copy its table (seconds each at this size) and say nothing of DynamoDB's. The figure
printed for DynamoDB is those counts at a stated latency per call (an assumption, labelled as one).

The mind: 40% unverified low-priority memories untouched for 40 days (to be summarized), 10% of the
memories in duplicate pairs (to be merged), a third verified (left alone), the rest recent.
"""

from __future__ import annotations

import argparse
import math
import time
from datetime import timedelta
from typing import Any

from bench.common import USER, content_text

# assumptions for the DynamoDB estimate, not measurements
QUERY_PAGE_MS = 60.0  # one 1 MB query page, consistent
TRANSACTION_MS = 40.0  # one TransactWriteItems of BATCH memories (up to 3 actions each)
ITEM_BYTES = 600  # a memory item without its vector, the read's projection


def items(n: int) -> list[dict[str, Any]]:
    from synapse.core.models.base import iso, utcnow
    from synapse.store.keys import Space, memory_id

    old, new = iso(utcnow() - timedelta(days=40)), iso(utcnow())
    out = []
    for i in range(n):
        category = ("fact", "context", "project", "note")[i % 4]
        low, verified = i % 10 < 4, i % 3 == 0
        dup = i % 10 == 8  # i and i+4 share (i // 40) and the category when i % 4 is equal
        content = f"Duplicate fact number {i // 40} of {category}" if dup else content_text(i, 120)
        out.append(
            {
                "sk": {"S": f"nug:{memory_id(Space(USER), category, f'k{i}')}"},
                "category": {"S": category},
                "key": {"S": f"k{i}"},
                "content": {"S": content if i % 20 != 8 else content.upper()},
                "tags": {"L": [{"S": f"t{i % 30}"}]},
                "priority": {"S": "low" if low else "normal"},
                "source": {"S": "user" if verified else "agent"},
                "verified": {"BOOL": verified},
                "confidence": {"N": "0.7"},
                "created_at": {"S": old},
                "updated_at": {"S": old if low else new},
                "rev": {"N": "1"},
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.consolidate")
    parser.add_argument("--n", type=int, default=10_000)
    n = parser.parse_args().n
    from synapse.core.models.base import utcnow
    from synapse.services.review import consolidate
    from synapse.store import nuggets
    from synapse.store.keys import Space

    space = Space(USER)
    raw = items(n)
    started = time.perf_counter()
    stored = [nuggets.from_item(space, item) for item in raw]
    decode = time.perf_counter() - started
    started = time.perf_counter()
    writes, out = consolidate.plan(space, stored, utcnow())
    planned = time.perf_counter() - started
    pages = math.ceil(n * ITEM_BYTES / 1_000_000)
    transactions = math.ceil(len(writes) / consolidate.BATCH)
    io_s = (pages * QUERY_PAGE_MS + transactions * TRANSACTION_MS) / 1000
    print(
        f"memories: {n}; consolidated {out.consolidated}, merged {out.merged}, summaries {len(out.created)}"
    )
    print(
        f"decoding the mind's items: {decode:.2f} s; the plan: {planned:.2f} s "
        f"({planned / decode:.2f}x the decoding)"
    )
    print(f"writes: {len(writes)} in {transactions} transactions; the read: ~{pages} query pages")
    print(
        f"DynamoDB, assuming {QUERY_PAGE_MS:.0f} ms a page and {TRANSACTION_MS:.0f} ms a transaction: "
        f"~{io_s:.1f} s; in all ~{io_s + decode + planned:.1f} s (Lambda's limit: 900 s; the route's: 29 s)"
    )


if __name__ == "__main__":
    main()
