"""2. Cost per recall: bytes and read units, from DynamoDB's item-size rules and measured through moto."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bench.common import (
    RCU_BYTES,
    USER,
    StubEmbedder,
    count_calls,
    i8s_items,
    item_size,
    moto_aws,
    nugget_item,
    number_list,
    patched,
    query_cost,
    seed_moto,
    unit_rows,
)


def modelled(n: int, rng: np.random.Generator) -> dict[str, Any]:
    """Read cost of one recall over n nuggets: stored int8 (cold / warm) vs float16 and number lists."""
    vectors = unit_rows(rng, n)
    i8 = [item_size(it) for it in i8s_items(vectors, with_key=True)]
    f16 = [
        item_size(nugget_item(i, {"B": v.astype("<f2").tobytes()}, with_key=True))
        for i, v in enumerate(vectors)
    ]
    sample = min(n, 500)  # number lists are big to build: sized on a sample, scaled
    nl_sizes = [item_size(nugget_item(i, number_list(vectors[i]), with_key=True)) for i in range(sample)]
    nl = [nl_sizes[i % sample] for i in range(n)]
    # the version item as the chat flow leaves it: seq, epoch, its latest writes' ids (at most
    # RECENT entries of RECENT_MAX_IDS ids: here the full three entries of five ids, its largest)
    entry = {"M": {"s": {"N": "123456"}, "ids": {"L": [{"S": "0" * 36}] * 5}}}
    ver_item = {
        "pk": {"S": f"mem:{USER}"},
        "sk": {"S": "ver"},
        "seq": {"N": "123456"},
        "epoch": {"S": "0" * 32},
        "recent": {"L": [entry] * 3},
    }
    ver = item_size(ver_item)
    get_rcu = math.ceil(ver / RCU_BYTES)
    cold = query_cost(i8)
    return {
        "item_bytes_mean": {
            "int8": round(float(np.mean(i8)), 1),
            "float16": round(float(np.mean(f16)), 1),
            "number_list": round(float(np.mean(nl)), 1),
        },
        "int8_cold": {**cold, "rcu": cold["rcu"] + get_rcu, "bytes": cold["bytes"] + ver},
        "int8_warm": {"bytes": ver, "pages": 0, "rcu": get_rcu},
        "naive_float16_full_read": query_cost(f16),
        "naive_number_list_full_read": query_cost(nl),
    }


def measured(n: int, rng: np.random.Generator) -> dict[str, Any]:
    """recall.recall through moto: cold, warm (nothing written between), and cold again after a write."""
    from synapse.ai import embeddings
    from synapse.core.models.base import Category
    from synapse.core.models.chat import RecallIn
    from synapse.core.models.memory import MemoryIn
    from synapse.core.principal import Principal
    from synapse.services.memory import memories, recall
    from synapse.store import db
    from synapse.store.keys import Space
    from synapse.store.minds import Mind

    out: dict[str, Any] = {}
    with moto_aws():
        seed_moto(n, rng)
        embedder = StubEmbedder()
        who = Principal(
            user_id=USER, kind="user", scopes=frozenset({"memory:read", "memory:write"}), key_id=""
        )
        agent = Principal(user_id=USER, kind="agent", scopes=frozenset({"memory:write"}), key_id="k")
        body = RecallIn(query="what does the user prefer for the editor theme", limit=10)
        traffic: dict[str, list[int]] = {}

        def after(http_response: Any = None, model: Any = None, **_: Any) -> None:
            traffic.setdefault(model.name, []).append(len(http_response.content or b""))

        db.client().meta.events.register("after-call.dynamodb", after)
        with patched(embeddings, "get_embedder", lambda *_a, **_k: embedder):
            for phase in ("cold", "warm", "after_write"):
                if phase == "after_write":
                    memories.put(
                        agent,
                        Mind(Space(USER)),
                        MemoryIn(category=Category.fact, key="one_more", content="one more memory"),
                    )
                traffic.clear()
                with count_calls() as calls:
                    recall.recall(who, Mind(Space(USER)), body)
                out[phase] = {
                    "requests": dict(sorted(calls.items())),
                    "response_bytes": {k: sum(v) for k, v in traffic.items()},
                    "response_bytes_total": sum(sum(v) for v in traffic.values()),
                }
    return out


def run(sizes: list[int], moto_n: int, log: Any) -> dict[str, Any]:
    """Modelled cost at every size; requests and bytes measured through moto at `moto_n` nuggets
    (moto's response serializer costs ~7-15 ms an item here: 10k would take minutes)."""
    rng = np.random.default_rng(11)
    out: dict[str, Any] = {"model": {}, "moto_n": moto_n}
    for n in sizes:
        log(f"  cost n={n}")
        out["model"][str(n)] = modelled(n, rng)
    out["moto"] = measured(moto_n, rng)
    return out
