"""8. Webhooks in the local run (`python -m local`, receivers on loopback): the delivery latency from a
write's answer to the receiver's request (p50 / p95 over 200 writes); a write's own latency with 3
webhooks registered against none (interleaved, in the same run); and a receiver down (500s) then up:
every event arrives, repeats only with the same webhook-id, in `seq` order once sorted."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import summary
from bench.e2e import Server
from harness.receiver import Receiver, running_receiver


def _register(server: Server, user: str, url: str) -> dict[str, Any]:
    import requests

    r = requests.post(
        f"{server.url}/webhooks",
        json={"url": url},
        headers={"Authorization": f"Bearer {server.token(user)}"},
        timeout=30,
    )
    r.raise_for_status()
    return dict(r.json())


def _write(session: Any, server: Server, token: str, key: str) -> tuple[str, float, float]:
    """(memory id, the write's latency in ms, when its answer arrived: time.time())."""
    t0 = time.perf_counter()
    r = session.post(
        f"{server.url}/memory",
        json={"category": "note", "key": key, "content": f"Bench note {key}"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    r.raise_for_status()
    return str(r.json()["id"]), (time.perf_counter() - t0) * 1000, time.time()


def _by_memory(receiver: Receiver) -> dict[str, list[tuple[float, str, dict[str, Any]]]]:
    out: dict[str, list[tuple[float, str, dict[str, Any]]]] = {}
    for req in list(receiver.requests):
        payload = json.loads(req.body)
        out.setdefault(str(payload["data"].get("memoryId")), []).append(
            (req.at, req.headers["webhook-id"], payload)
        )
    return out


def latency(server: Server, writes: int, log: Callable[[str], None]) -> dict[str, Any]:
    import requests

    with running_receiver() as receiver:
        _register(server, "wh-latency", receiver.url)
        session = requests.Session()
        token = server.token("wh-latency")
        _write(session, server, token, "warm_up")  # the functions' first workers start here
        receiver.wait_for(1, timeout=60)
        receiver.requests.clear()
        answered: dict[str, float] = {}
        for i in range(writes):
            mem_id, _, at = _write(session, server, token, f"lat_{i}")
            answered[mem_id] = at
        receiver.wait_for(writes, timeout=120)
        got = _by_memory(receiver)
    delays = [(min(a for a, _, _ in got[m]) - at) * 1000 for m, at in answered.items() if m in got]
    log(f"   delivery latency over {len(delays)} of {writes} writes")
    return {"writes": writes, "delivered": len(delays), "delivery_ms": summary(delays) if delays else None}


def write_cost(server: Server, writes: int, log: Callable[[str], None]) -> dict[str, Any]:
    """The same writes by a user with no webhook and one with 3, alternated (each user's first write
    starts nothing new: both warmed first)."""
    import requests

    with running_receiver() as a, running_receiver() as b, running_receiver() as c:
        for rec in (a, b, c):
            _register(server, "wh-three", rec.url)
        session = requests.Session()
        tokens = {"none": server.token("wh-none"), "three": server.token("wh-three")}
        samples: dict[str, list[float]] = {"none": [], "three": []}
        for who in ("none", "three"):
            _write(session, server, tokens[who], "warm_up")
        for i in range(writes):
            for who in ("none", "three") if i % 2 == 0 else ("three", "none"):
                samples[who].append(_write(session, server, tokens[who], f"cost_{i}")[1])
        a.wait_for(writes + 1, timeout=60)
    none, three = summary(samples["none"]), summary(samples["three"])
    ratio = round(three["median_ms"] / none["median_ms"], 3)
    log(f"   write p50: none {none['median_ms']} ms, 3 webhooks {three['median_ms']} ms ({ratio}×)")
    return {"writes_each": writes, "no_webhook_ms": none, "three_webhooks_ms": three, "ratio_p50": ratio}


def recovery(server: Server, writes: int, down_s: float, log: Callable[[str], None]) -> dict[str, Any]:
    import requests

    with running_receiver() as receiver:
        _register(server, "wh-down", receiver.url)
        receiver.status = 500
        session = requests.Session()
        token = server.token("wh-down")
        written = [_write(session, server, token, f"down_{i}")[0] for i in range(writes)]
        time.sleep(down_s)
        receiver.status = 200
        up = time.time()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            ok = {m for m, reqs in _by_memory(receiver).items() for at, _, _ in reqs if at >= up}
            if set(written) <= ok:
                break
            time.sleep(0.2)
        got = _by_memory(receiver)
    delivered = {m for m, reqs in got.items() for at, _, _ in reqs if at >= up}
    same_id = all(len({wid for _, wid, _ in reqs}) == 1 for reqs in got.values())
    last = {m: max(reqs, key=lambda r: r[0])[2]["data"]["seq"] for m, reqs in got.items()}
    in_order = [m for m, _ in sorted(last.items(), key=lambda kv: kv[1])] == [m for m in written if m in last]
    result = {
        "writes": writes,
        "down_s": down_s,
        "missing": len(set(written) - delivered),
        "one_id_per_event": same_id,
        "seq_order_matches_writes": in_order,
        "requests": sum(len(r) for r in got.values()),
        "recovered_s": round(max((at for reqs in got.values() for at, _, _ in reqs), default=up) - up, 1),
    }
    log(f"   receiver down {down_s} s then up: {result}")
    return result


def run(quick: bool, log: Callable[[str], None]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="synapse-bench-webhooks-") as tmp:
        server = Server(Path(tmp) / "data", {"WEBHOOK_RETRY_BASE_SECONDS": "1"}).start()
        try:
            return {
                "latency": latency(server, 50 if quick else 200, log),
                "write_cost": write_cost(server, 30 if quick else 100, log),
                "recovery": recovery(server, 10 if quick else 30, 3.0 if quick else 10.0, log),
            }
        finally:
            server.stop()
