"""Writers of one mind take turns for its version number (every write of memories takes the next seq
in its transaction): many at once all succeed, none is lost, and a recall sees every one."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import requests

from tests.e2e.conftest import LocalServer


def test_parallel_writes_to_one_mind_all_land_and_a_recall_sees_them(local_server: LocalServer) -> None:
    user = f"busy-{uuid.uuid4().hex[:8]}"
    headers = local_server.headers(local_server.make_jwt(user))
    # a recall first, so a worker holds the mind's corpus and must catch up afterwards
    assert requests.post(
        f"{local_server.url}/memory/recall", json={"query": "x"}, headers=headers, timeout=60
    ).ok

    def write(i: int) -> int:
        body = {"category": "fact", "key": f"fact_{i}", "content": f"Parallel fact number {i} about Lisbon"}
        return requests.post(
            f"{local_server.url}/memory", json=body, headers=headers, timeout=120
        ).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(write, range(32)))
    assert statuses == [201] * 32
    listed = requests.get(f"{local_server.url}/memory?limit=100", headers=headers, timeout=60).json()
    assert len(listed["memories"]) == 32
    found = requests.post(
        f"{local_server.url}/memory/recall",
        json={"query": "Lisbon", "limit": 50},
        headers=headers,
        timeout=60,
    ).json()
    assert len(found["memories"]) == 32
