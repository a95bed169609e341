"""The local run's functions: a pool of worker processes per function, each serving one request at a time.

Powertools keeps the current request on the `BaseRouter` class, so two resolvers running at once in one
process read each other's event. The local run must hand every request its own event, and still serve
requests in parallel: one worker process per concurrent invocation, as Lambda does.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from local.functions import FunctionError, Functions, WorkerCrashed, reason
from local.template import Function

ECHO = """
import json
import os
import time

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

app = APIGatewayHttpResolver()
loads = globals().setdefault("loads", [])
loads.append(1)
calls = []


@app.post("/echo")
def echo():
    body = app.current_event.json_body
    started = time.time()
    time.sleep(body.get("sleep", 0))  # other requests arrive meanwhile
    calls.append(1)
    return {
        "saw": app.current_event.json_body["client"],
        "pid": os.getpid(),
        "started": started,
        "ended": time.time(),
        "loads": len(loads),
        "calls": len(calls),
    }


def handler(event, context):
    return app.resolve(event, context)
"""

TOOLS = """
import decimal
import os
import sys
import time
from pathlib import Path


def handler(event, context):
    what = event.get("do")
    if what == "exit":
        os._exit(3)
    if what == "raise":
        raise ValueError("the handler failed")
    if what == "sleep":
        Path(event["marker"]).write_text("started")
        time.sleep(event["seconds"])
    if what == "print":
        print("a log line of the handler")
    return {
        "pid": os.getpid(),
        "env": os.environ.get("WHO"),
        "n": decimal.Decimal("1.5"),
        "text": "ก",
        "request_id": context.aws_request_id,
    }
"""

BROKEN = """
raise RuntimeError("cannot import me")
"""


def _function(tmp_path: Path, name: str, source: str) -> Function:
    code = tmp_path / name
    code.mkdir()
    (code / "app.py").write_text(source)
    return Function(
        logical_id=name,
        file=code / "app.py",
        attr="handler",
        code_dir=code,
        environment={},
        timeout=30,
        memory=128,
    )


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Any]:
    """make(limit=..., env=...) → Functions over the echo, tools and broken functions; closed after."""
    made: list[Functions] = []
    fns = {
        "Echo": _function(tmp_path, "Echo", ECHO),
        "Tools": _function(tmp_path, "Tools", TOOLS),
        "Other": _function(tmp_path, "Other", TOOLS),
        "Broken": _function(tmp_path, "Broken", BROKEN),
    }

    def _make(**kwargs: Any) -> Functions:
        functions = Functions(fns, **kwargs)
        made.append(functions)
        return functions

    yield _make
    for functions in made:
        functions.close(timeout=2)


def _event(client: int, sleep: float = 0.0) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": "POST /echo",
        "rawPath": "/echo",
        "rawQueryString": "",
        "headers": {"content-type": "application/json"},
        "requestContext": {
            "http": {"method": "POST", "path": "/echo", "sourceIp": "127.0.0.1"},
            "requestId": f"r{client}",
            "routeKey": "POST /echo",
            "stage": "$default",
        },
        "body": json.dumps({"client": client, "sleep": sleep}),
        "isBase64Encoded": False,
    }


def _parallel(functions: Functions, clients: int, sleep: float) -> list[dict[str, Any]]:
    barrier = threading.Barrier(clients)

    def call(client: int) -> dict[str, Any]:
        barrier.wait(timeout=30)
        answer = functions.invoke("Echo", _event(client, sleep))
        return dict(json.loads(answer["body"]))

    with ThreadPoolExecutor(clients) as pool:
        return list(pool.map(call, range(clients)))


def _most_at_once(answers: list[dict[str, Any]]) -> int:
    """The largest number of invocations that were running at the same moment."""
    edges = sorted([(a["started"], 1) for a in answers] + [(a["ended"], -1) for a in answers])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


def test_parallel_requests_run_at_once_each_with_its_own_event(make: Any) -> None:
    # Given one Powertools function whose pool has grown to four warm workers
    functions = make(limit=4)
    _parallel(functions, 4, sleep=2.0)
    assert functions.pools["Echo"].size == 4
    # When four clients call it at the same moment
    answers = _parallel(functions, 4, sleep=1.0)
    # Then every request was handled with its own body, not a neighbour's
    assert [a["saw"] for a in answers] == list(range(4))
    # and all four ran at the same time, each in a process of its own
    assert _most_at_once(answers) == 4, answers
    assert len({a["pid"] for a in answers}) == 4


def test_the_pool_grows_under_load_only_up_to_its_bound(make: Any) -> None:
    # Given a bound of two workers
    functions = make(limit=2)
    # When five clients call at once
    answers = _parallel(functions, 5, sleep=0.5)
    # Then each got its own answer, at most two ran at once, in two processes
    assert [a["saw"] for a in answers] == list(range(5))
    assert _most_at_once(answers) == 2, answers
    assert len({a["pid"] for a in answers}) == 2
    assert functions.pools["Echo"].size == 2


def test_workers_start_on_first_use_and_stay_warm(make: Any) -> None:
    # Given a fresh pool: no process yet
    functions = make()
    pool = functions.pools["Echo"]
    assert pool.size == 0
    # When it is called three times, one after the other
    answers = [json.loads(functions.invoke("Echo", _event(i))["body"]) for i in range(3)]
    # Then one worker served them all, its module loaded once
    assert [a["saw"] for a in answers] == [0, 1, 2]
    assert len({a["pid"] for a in answers}) == 1
    assert [a["loads"] for a in answers] == [1, 1, 1]
    assert [a["calls"] for a in answers] == [1, 2, 3]
    assert (pool.size, pool.started) == (1, 1)


def test_a_slow_call_holds_no_other_function_up(make: Any, tmp_path: Path) -> None:
    # Given a warm function, and another function busy for 3 seconds
    functions = make()
    functions.invoke("Other", {})
    marker = tmp_path / "slow-started"
    slow = threading.Thread(
        target=functions.invoke, args=("Tools", {"do": "sleep", "seconds": 3, "marker": str(marker)})
    )
    slow.start()
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert marker.exists()
    # When the first function is called meanwhile
    t0 = time.perf_counter()
    answer = functions.invoke("Other", {})
    elapsed = time.perf_counter() - t0
    # Then it answers at once, while the slow call is still running
    assert elapsed < 1.0, elapsed
    assert slow.is_alive()
    assert answer["text"] == "ก"
    slow.join(timeout=30)


def test_a_worker_that_dies_fails_its_request_and_is_replaced(make: Any) -> None:
    functions = make()
    first = functions.invoke("Tools", {})["pid"]
    # When the worker exits in the middle of an invocation
    with pytest.raises(WorkerCrashed):
        functions.invoke("Tools", {"do": "exit"})
    # Then the next request is served by a new worker
    again = functions.invoke("Tools", {})
    assert again["pid"] != first
    pool = functions.pools["Tools"]
    assert (pool.crashed, pool.started, pool.size) == (1, 2, 1)


def test_a_handler_error_is_lambdas_error_payload_and_the_worker_stays(make: Any) -> None:
    functions = make()
    pid = functions.invoke("Tools", {})["pid"]
    with pytest.raises(FunctionError) as caught:
        functions.invoke("Tools", {"do": "raise"}, request_id="req-7")
    payload = caught.value.payload
    assert (payload["errorType"], payload["errorMessage"], payload["requestId"]) == (
        "ValueError",
        "the handler failed",
        "req-7",
    )
    assert any("app.py" in frame for frame in payload["stackTrace"])
    assert reason(caught.value) == "ValueError"  # what the server logs: the type, never the message
    assert functions.invoke("Tools", {})["pid"] == pid


def test_a_module_that_fails_to_load_is_an_init_error_tried_again_later(make: Any) -> None:
    functions = make()
    for _ in range(2):
        with pytest.raises(FunctionError) as caught:
            functions.invoke("Broken", {})
        assert caught.value.payload["errorType"] == "RuntimeError"
        assert caught.value.payload["errorMessage"] == "cannot import me"
    assert functions.pools["Broken"].size == 0


def test_each_function_gets_its_own_environment_and_context(make: Any) -> None:
    base = dict(os.environ)
    functions = make(env={"Tools": {**base, "WHO": "tools"}, "Other": {**base, "WHO": "other"}})
    tools = functions.invoke("Tools", {}, request_id="abc")
    assert (tools["env"], tools["request_id"]) == ("tools", "abc")
    assert functions.invoke("Other", {})["env"] == "other"


def test_results_are_serialised_as_lambdas_python_runtime_does(make: Any) -> None:
    functions = make()
    answer = functions.invoke_raw("Tools", {}, request_id="r1")
    assert not answer.error
    pid = answer.value()["pid"]
    # json.dumps with ensure_ascii=False, Decimals as numbers (awslambdaric for python3.13)
    assert answer.payload == (
        f'{{"pid": {pid}, "env": null, "n": 1.5, "text": "ก", "request_id": "r1"}}'.encode()
    )


def test_a_workers_stdout_can_go_elsewhere(make: Any, tmp_path: Path) -> None:
    log = (tmp_path / "worker.log").open("wb")
    try:
        functions = make(stdout=log)
        functions.invoke("Tools", {"do": "print"})
        functions.close()
    finally:
        log.close()
    assert "a log line of the handler" in (tmp_path / "worker.log").read_text()


def test_close_stops_every_worker(make: Any) -> None:
    functions = make()
    pids = [functions.invoke("Tools", {})["pid"], functions.invoke("Other", {})["pid"]]
    functions.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_workers_idle_past_the_limit_are_stopped_and_the_next_call_is_cold_again(make: Any) -> None:
    # Given workers that may stay idle for half a second
    functions = make(idle_seconds=0.5)
    pool = functions.pools["Tools"]
    pid = functions.invoke("Tools", {})["pid"]
    # When it stays idle past that
    deadline = time.monotonic() + 10
    while pool.size and time.monotonic() < deadline:
        time.sleep(0.05)
    # Then its worker is gone, and the next call starts a new one
    assert pool.size == 0
    while _alive(pid) and time.monotonic() < deadline:  # (it exits a moment after it is let go)
        time.sleep(0.05)
    assert not _alive(pid)
    assert functions.invoke("Tools", {})["pid"] != pid
    assert pool.started == 2


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie waiting to be reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
