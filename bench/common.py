"""Shared helpers of `python -m bench`: timing, synthetic items, DynamoDB item sizes, moto, stubs."""

from __future__ import annotations

import hashlib
import math
import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
LAYER = ROOT / "layers" / "common" / "python"
for _p in (str(LAYER), str(ROOT)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

DIM = 768
MODEL = "bench"
TABLE = "synapse-memory-bench"
IDEMPOTENCY = "synapse-idempotency-bench"
USER = "alice"
PAGE_LIMIT = 1024 * 1024  # DynamoDB returns at most 1 MB of items per Query page
RCU_BYTES = 4096  # one strongly consistent read unit

_WORDS = [
    "the",
    "user",
    "prefers",
    "dark",
    "theme",
    "in",
    "every",
    "editor",
    "and",
    "works",
    "on",
    "a",
    "rust",
    "service",
    "for",
    "payments",
    "while",
    "learning",
    "thai",
    "cooking",
    "on",
    "weekends",
    "with",
    "family",
    "in",
    "chiang",
    "mai",
    "and",
    "a",
    "dog",
    "named",
    "mango",
    "who",
    "likes",
    "long",
    "walks",
    "near",
    "the",
    "river",
    "project",
    "deadline",
    "is",
    "friday",
    "meeting",
    "notes",
    "mention",
    "latency",
    "budget",
]


# --- timing --------------------------------------------------------------------------------------


def timed(fn: Callable[[], Any], repeat: int, warmup: int = 1) -> dict[str, float]:
    """Median / min / p95 wall time of `fn` in milliseconds."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000.0)
    return summary(samples)


def summary(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered), 3),
        "min_ms": round(ordered[0], 3),
        "p95_ms": round(percentile(ordered, 95), 3),
        "n": len(ordered),
    }


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(pct / 100.0 * len(ordered)))
    return float(ordered[rank - 1])


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor()
    import botocore

    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "botocore": botocore.__version__,
        "platform": platform.platform(),
    }


# --- synthetic data ------------------------------------------------------------------------------


def unit_rows(rng: np.random.Generator, n: int, dim: int = DIM, decay: bool = False) -> np.ndarray:
    """n unit vectors: isotropic, or with variance decaying across dimensions (a Matryoshka-like
    proxy: the first dimensions carry most of the signal, std_d = exp(-d/256))."""
    m = rng.standard_normal((n, dim), dtype=np.float32)
    if decay:
        m *= np.exp(-np.arange(dim, dtype=np.float32) / 256.0)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m


def content_text(i: int, chars: int = 200) -> str:
    rng = np.random.default_rng(i)
    words = [_WORDS[j] for j in rng.integers(0, len(_WORDS), size=60)]
    text = f"memory {i}: " + " ".join(words)
    return text[:chars]


def nugget_item(i: int, emb: Mapping[str, Any] | None, *, with_key: bool = False) -> dict[str, Any]:
    """One nugget in the exact shape boto3's client returns for recall's projection (`with_key`
    adds the table's keys and `rev`: the full stored item)."""
    mem_id = str(uuid.UUID(bytes=hashlib.md5(str(i).encode()).digest()))
    item: dict[str, Any] = {
        "sk": {"S": f"nug:{mem_id}"},
        "category": {"S": ("fact", "preference", "project", "context")[i % 4]},
        "key": {"S": f"bench_key_{i}"},
        "content": {"S": content_text(i)},
        "tags": {"L": [{"S": "bench"}, {"S": f"t{i % 50}"}]},
        "priority": {"S": "normal"},
        "source": {"S": "agent"},
        "verified": {"BOOL": bool(i % 3 == 0)},
        "confidence": {"N": "0.7"},
        "session_id": {"S": f"session-{i // 100}"},
        "created_at": {"S": "2026-11-01T10:00:00.000000Z"},
        "updated_at": {"S": "2026-11-20T10:00:00.000000Z"},
    }
    if emb is not None:
        item["emb"] = dict(emb)
    if with_key:
        item["pk"] = {"S": f"mem:{USER}"}
        item["rev"] = {"N": "1"}
        if emb is not None:  # stored beside the vector for people; recall does not read them
            item["emb_model"] = {"S": MODEL}
            item["emb_dim"] = {"N": str(DIM)}
    return item


def i8s_items(vectors: np.ndarray, *, with_key: bool = False) -> list[dict[str, Any]]:
    from synapse.store import codec

    return [
        nugget_item(i, {"B": codec.make_vector(v, MODEL).data}, with_key=with_key)
        for i, v in enumerate(vectors)
    ]


def number_list(vec: np.ndarray) -> dict[str, Any]:
    """A vector as a DynamoDB list of numbers (shortest float32 repr per element)."""
    return {"L": [{"N": str(x)} for x in np.asarray(vec, dtype=np.float32).tolist()]}


# --- DynamoDB item sizes -------------------------------------------------------------------------


def number_size(text: str) -> int:
    """DynamoDB's size of a number: about one byte per two significant digits, plus one."""
    d = Decimal(text)
    if d == 0:
        return 1
    digits = d.normalize().as_tuple().digits
    return (len(digits) + 1) // 2 + 1


def value_size(attr: Mapping[str, Any]) -> int:
    ((kind, value),) = attr.items()
    if kind == "S":
        return len(value.encode())
    if kind == "B":
        return len(value)
    if kind == "N":
        return number_size(value)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in value)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in value.items())
    if kind == "SS":
        return sum(len(s.encode()) for s in value)
    if kind == "NS":
        return sum(number_size(s) for s in value)
    if kind == "BS":
        return sum(len(b) for b in value)
    raise ValueError(kind)


def item_size(item: Mapping[str, Any]) -> int:
    """An item's size by DynamoDB's rules: attribute names (UTF-8) plus values."""
    return sum(len(name.encode()) + value_size(v) for name, v in item.items())


def query_cost(sizes: Sequence[int]) -> dict[str, Any]:
    """A full-partition strongly consistent Query: pages of ≤ 1 MB, each page's total size rounded
    up to 4 KB for its read units (projection does not lower them: items are read whole)."""
    pages, rcu, page = 0, 0, 0
    for s in sizes:
        if page and page + s > PAGE_LIMIT:
            pages += 1
            rcu += math.ceil(page / RCU_BYTES)
            page = 0
        page += s
    if page or not pages:
        pages += 1
        rcu += max(1, math.ceil(page / RCU_BYTES))
    return {"bytes": int(sum(sizes)), "pages": pages, "rcu": rcu}


# --- the naive baseline ---------------------------------------------------------------------------


def baseline_top_k(items: Sequence[Mapping[str, Any]], query: Sequence[float], k: int = 10) -> list[int]:
    """Vectors stored as a DynamoDB number list, parsed and scored by cosine in a Python loop."""
    q = [float(x) for x in query]
    qn = math.sqrt(sum(x * x for x in q)) or 1.0
    scored = []
    for i, item in enumerate(items):
        vec = [float(v["N"]) for v in item["emb"]["L"]]
        dot = sum(a * b for a, b in zip(vec, q, strict=True))
        norm = math.sqrt(sum(a * a for a in vec)) or 1.0
        scored.append((dot / (norm * qn), i))
    scored.sort(reverse=True)
    return [i for _, i in scored[:k]]


# --- stubs ----------------------------------------------------------------------------------------


class StubEmbedder:
    """Deterministic random unit vectors (model "bench", 768-d); optional delay; counts its calls."""

    model = MODEL
    dim = DIM

    def __init__(self, query_delay: float = 0.0) -> None:
        self.query_delay = query_delay
        self.query_calls = 0
        self.document_calls = 0

    @staticmethod
    def vector(text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        return unit_rows(np.random.default_rng(seed), 1)[0]

    def embed_query(self, text: str) -> np.ndarray:
        self.query_calls += 1
        if self.query_delay:
            time.sleep(self.query_delay)
        return self.vector(text)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.document_calls += 1
        return np.stack([self.vector(t) for t in texts]) if texts else np.zeros((0, DIM), np.float32)


@contextmanager
def patched(obj: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


@contextmanager
def env(**values: str | None) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextmanager
def moto_aws(**extra_env: str) -> Iterator[Any]:
    """moto with the tables from template.yaml, the bus and a KMS key, as tests/conftest.py makes them."""
    import boto3
    from moto import mock_aws

    from harness.lambdas import SNAPSHOT_BUCKET, create_aws

    base = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": None,
        "GEMINI_API_KEY": None,
        "GEMINI_BASE_URL": None,
        "MEMORY_TABLE": TABLE,
        "IDEMPOTENCY_TABLE": IDEMPOTENCY,
        "EVENT_BUS_NAME": "MemoryBus",
        "SNAPSHOT_BUCKET": SNAPSHOT_BUCKET,
        "JWT_SECRET": "bench-secret-that-is-long-enough-for-hs256",
        "LOCAL_EMBEDDER": "none",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_SERVICE_NAME": "synapse",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "KMS_KEY_ID": None,
    }
    with env(**{**base, **extra_env}), mock_aws():
        from synapse.core import state

        os.environ["KMS_KEY_ID"] = create_aws(TABLE, IDEMPOTENCY, "MemoryBus")
        state.reset()
        try:
            yield boto3.client("dynamodb")
        finally:
            state.reset()


@contextmanager
def count_calls() -> Iterator[dict[str, int]]:
    """Every AWS API call made meanwhile, by "service.Operation" (all clients, all sessions)."""
    import botocore.client

    counts: dict[str, int] = {}
    original = botocore.client.BaseClient._make_api_call

    def counting(self: Any, operation_name: str, api_params: Any) -> Any:
        key = f"{self.meta.service_model.service_name}.{operation_name}"
        counts[key] = counts.get(key, 0) + 1
        return original(self, operation_name, api_params)

    botocore.client.BaseClient._make_api_call = counting  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        botocore.client.BaseClient._make_api_call = original  # type: ignore[method-assign]


def seed_moto(n: int, rng: np.random.Generator) -> np.ndarray:
    """n nuggets of USER with int8 vectors, written in batches; then a step of the mind's version
    (as after any write: an empty change-log entry)."""
    from synapse.store import changelog, db
    from synapse.store.keys import Space

    vectors = unit_rows(rng, n)
    db.batch_write([{"PutRequest": {"Item": item}} for item in i8s_items(vectors, with_key=True)])
    space = Space(USER)
    changelog.transact(changelog.step(space, changelog.read(space), []))
    return vectors


ALICE_WHO = {"userId": USER, "kind": "user", "scopes": "memory:read memory:write", "keyId": ""}
