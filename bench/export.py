"""The export writer at 100k memories (issue 28's target): the time and the peak memory of
`services/account/exports.write`, the function behind ExportRequested, for a user whose mind holds n
memories (a fifth of them with a kept version), some conversation, a key and a provider key.

    .venv/bin/python -m bench.export                 # n = 100,000
    .venv/bin/python -m bench.export --n 10000

What is timed is the function's own work: botocore parsing every Query page, the service's item codec,
the merge of memories with their history, JSON Lines, and the multipart upload's requests made. The
partition's pages are answered from bytes made here as DynamoDB sends them (projected attributes of
items up to 1 MB a page: moto's own Query of a 100k-item partition would take longer than the whole
function); the small reads (minds, identity, sessions, keys) and the export's record go through moto;
S3's answers to the upload are made here and the parts dropped (moto would keep the file in this
process and count it as the writer's memory). The network is not in the time: the read units and the
bytes are reported, and README Performance turns them into time on AWS.

Peak memory is the writer's Python allocations (tracemalloc, a second run: it slows the first) and the
process's resident growth over the data held by the bench.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import tracemalloc
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import (
    MODEL,
    ROOT,
    USER,
    item_size,
    machine,
    moto_aws,
    nugget_item,
    query_cost,
    unit_rows,
)
from bench.snapshot import _Raw, query_pages

TARGET_SECONDS = 900  # Lambda's longest run (the writer's timeout)
TARGET_MB = 1024  # the writer's memory (template.yaml)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def history_items(full: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A kept version for every fifth memory (its first wording), in the table's order."""
    out = []
    for i, item in enumerate(full):
        if i % 5:
            continue
        mem_id = item["sk"]["S"].removeprefix("nug:")
        out.append(
            {
                "pk": item["pk"],
                "sk": {"S": f"hist:{mem_id}:{1:08d}"},
                "version": {"N": "1"},
                "content": {"S": "first wording: " + item["content"]["S"]},
                "tags": item["tags"],
                "priority": {"S": "normal"},
                "source": {"S": "agent"},
                "verified": {"BOOL": False},
                "confidence": {"N": "0.7"},
                "updated_at": {"S": "2026-11-01T10:00:00Z"},
                "change": {"S": "created"},
            }
        )
        item["rev"] = {"N": "2"}
    return out


@contextmanager
def answered(db_client: Any, s3_client: Any, pages: dict[str, list[bytes]]) -> Iterator[dict[str, int]]:
    """The partition's Query pages (`nug:` and `hist:`, by ExclusiveStartKey) answered from bytes; every
    other DynamoDB call to moto; S3's multipart upload answered here, its parts counted and dropped."""
    from botocore.awsrequest import AWSResponse

    starts: dict[str, dict[str | None, int]] = {}
    for prefix, bodies in pages.items():
        starts[prefix] = {None: 0}
        for i, body in enumerate(bodies[:-1]):
            starts[prefix][json.loads(body)["LastEvaluatedKey"]["sk"]["S"]] = i + 1
    served = {"pages": 0, "parts": 0, "part_bytes": 0}

    def moto(request: Any) -> Any:
        # botocore calls every before-send handler, answered or not: moto's own stays off while this
        # runs (it would act on the parts too), and the calls not answered here are handed to it
        from moto.core.botocore_stubber import MockRawResponse

        status, headers, body = botocore_stubber.process_request(request)
        return AWSResponse(request.url, status, headers, MockRawResponse(body))

    def dynamodb(request: Any, event_name: str, **_: Any) -> Any:
        if not event_name.endswith(".Query"):
            return moto(request)
        body = json.loads(request.body)
        prefix = (body.get("ExpressionAttributeValues") or {}).get(":pre", {}).get("S")
        if prefix not in pages:
            return moto(request)
        start = (body.get("ExclusiveStartKey") or {}).get("sk", {}).get("S")
        served["pages"] += 1
        headers = {"Content-Type": "application/x-amz-json-1.0"}
        return AWSResponse(request.url, 200, headers, _Raw(pages[prefix][starts[prefix][start]]))

    def s3(request: Any, event_name: str, **_: Any) -> Any:
        op = event_name.rsplit(".", 1)[-1]
        xml = {"Content-Type": "application/xml"}
        if op == "CreateMultipartUpload":
            body = (
                "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>"
                "<UploadId>bench</UploadId></InitiateMultipartUploadResult>"
            )
            return AWSResponse(request.url, 200, xml, _Raw(body.encode()))
        if op in ("UploadPart", "PutObject"):
            data = request.body
            size = len(data) if isinstance(data, bytes | bytearray) else len(data.read())
            served["parts"] += 1
            served["part_bytes"] += size
            return AWSResponse(request.url, 200, {"ETag": f'"{uuid.uuid4().hex}"'}, _Raw(b""))
        if op == "CompleteMultipartUpload":
            body = '<CompleteMultipartUploadResult><ETag>"e"</ETag></CompleteMultipartUploadResult>'
            return AWSResponse(request.url, 200, xml, _Raw(body.encode()))
        raise AssertionError(f"unexpected {event_name}")

    from moto.core.models import botocore_stubber

    db_client.meta.events.register_first("before-send.dynamodb", dynamodb, unique_id="bench-exp-ddb")
    s3_client.meta.events.register_first("before-send.s3", s3, unique_id="bench-exp-s3")
    botocore_stubber.enabled = False
    try:
        yield served
    finally:
        botocore_stubber.enabled = True
        db_client.meta.events.unregister("before-send.dynamodb", unique_id="bench-exp-ddb")
        s3_client.meta.events.unregister("before-send.s3", unique_id="bench-exp-s3")


def run(n: int) -> dict[str, Any]:
    from synapse.core.models.base import utcnow
    from synapse.services.account import exports
    from synapse.store import bucket, codec, conversations, db
    from synapse.store.account import credentials
    from synapse.store.account import exports as store
    from synapse.store.keys import Space

    t_start = time.perf_counter()
    rng = np.random.default_rng(7)
    vectors = unit_rows(rng, n, decay=True)
    full = sorted(
        (
            nugget_item(i, {"B": codec.make_vector(v, MODEL).data}, with_key=True)
            for i, v in enumerate(vectors)
        ),
        key=lambda it: it["sk"]["S"],
    )
    del vectors
    kept = history_items(full)
    # what the export's Query returns of a memory: its projection (the vector is not read out)
    shown = [{k: v for k, v in it.items() if k not in ("pk", "emb", "emb_model", "emb_dim")} for it in full]
    pages = {"nug:": query_pages(full, shown), "hist:": query_pages(kept, [dict(h) for h in kept])}
    sizes = [item_size(it) for it in full] + [item_size(it) for it in kept]
    cost = query_cost([item_size(it) for it in full])
    cost_hist = query_cost([item_size(it) for it in kept])
    del shown
    _log(
        f"  export n={n}: data ready in {time.perf_counter() - t_start:.1f} s "
        f"({len(pages['nug:'])} + {len(pages['hist:'])} pages, {sum(sizes) / 1e6:.0f} MB of items)"
    )
    out: dict[str, Any] = {"n": n, "history_items": len(kept)}
    with moto_aws():
        space = Space(USER)
        # a conversation of 200 messages, a key and a provider key (small reads, through moto)
        for turn in range(4):
            said = [conversations.NewMessage("user", f"message {i}: ฉันชอบกาแฟ", utcnow()) for i in range(50)]
            conversations.append_messages(
                space, "s1", said, request_id=f"bench{turn}", now=utcnow(), ttl_days=30
            )
        credentials.put_provider(
            USER,
            credentials.ProviderRecord(
                provider="gemini", hint="AIza…0000", ciphertext=b"x", updated_at=utcnow()
            ),
        )
        ddb, s3 = db.client(), bucket.client()
        runs = []
        for traced in (False, True):
            export_id = uuid.uuid4().hex
            now = utcnow()
            store.create(USER, export_id, now, now + exports.KEPT)
            rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            with answered(ddb, s3, pages) as served:
                if traced:
                    tracemalloc.start()
                t0 = time.perf_counter()
                outcome = exports.write(USER, export_id)
                seconds = time.perf_counter() - t0
                peak = tracemalloc.get_traced_memory()[1] if traced else None
                if traced:
                    tracemalloc.stop()
            rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            record = store.get(USER, export_id)
            assert outcome == "ready" and record is not None, outcome
            assert served["pages"] == len(pages["nug:"]) + len(pages["hist:"]), served
            runs.append(
                {
                    "traced": traced,
                    "seconds": round(seconds, 2),
                    "peak_python_mb": round(peak / 1e6, 1) if peak is not None else None,
                    "rss_growth_mb": round((rss_after - rss_before) / 1024, 1),
                    "file_bytes": record.bytes,
                    "records": record.records,
                    "parts": served["parts"],
                    "uploaded_bytes": served["part_bytes"],
                }
            )
            _log(f"  export n={n} {'traced' if traced else 'timed'}: {runs[-1]}")
    timed, traced_run = runs
    out.update(
        {
            "seconds": timed["seconds"],
            "peak_python_mb": traced_run["peak_python_mb"],
            "rss_growth_mb": max(timed["rss_growth_mb"], traced_run["rss_growth_mb"]),
            "file_mb": round(timed["file_bytes"] / 1e6, 1),
            "records": timed["records"],
            "parts": timed["parts"],
            "query_pages": cost["pages"] + cost_hist["pages"],
            "rcu_strong": cost["rcu"] + cost_hist["rcu"],
            "dynamodb_mb": round((cost["bytes"] + cost_hist["bytes"]) / 1e6, 1),
            "runs": runs,
            "targets": {"seconds": TARGET_SECONDS, "memory_mb": TARGET_MB},
            "pass": timed["seconds"] < TARGET_SECONDS and (traced_run["peak_python_mb"] or 0) < TARGET_MB / 2,
        }
    )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.export", description=__doc__)
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--out", default=str(ROOT / ".bench" / "report-export.json"))
    args = p.parse_args(argv)
    report = {"machine": machine(), "export": run(args.n)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    e = report["export"]
    print(
        f"export of {e['n']:,} memories: {e['seconds']} s, peak {e['peak_python_mb']} MB of Python "
        f"allocations (resident growth {e['rss_growth_mb']} MB), file {e['file_mb']} MB in {e['parts']} "
        f"parts, {e['query_pages']} Query pages ({e['rcu_strong']} RCU strongly consistent, "
        f"{e['dynamodb_mb']} MB read)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
