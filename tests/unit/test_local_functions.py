"""The local run's functions: each loaded once, and never two invocations at once.

Powertools keeps the current request on the `BaseRouter` class, so two resolvers running at once in one
process read each other's event. The local run must hand every request its own event anyway.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from local.functions import Functions
from local.template import Function

HANDLER = """
import time

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

app = APIGatewayHttpResolver()
loads = globals().setdefault("loads", [])
loads.append(1)


@app.post("/echo")
def echo():
    time.sleep(0.2)  # another request arrives meanwhile
    return {"saw": app.current_event.json_body["client"]}


def handler(event, context):
    return app.resolve(event, context)
"""


def _event(client: int) -> dict[str, Any]:
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
        "body": json.dumps({"client": client}),
        "isBase64Encoded": False,
    }


def _functions(tmp_path: Path) -> Functions:
    (tmp_path / "echo").mkdir()
    (tmp_path / "echo" / "app.py").write_text(HANDLER)
    fn = Function(
        logical_id="EchoFunction",
        file=tmp_path / "echo" / "app.py",
        attr="handler",
        code_dir=tmp_path / "echo",
        environment={},
        timeout=10,
        memory=128,
    )
    return Functions({"EchoFunction": fn})


def test_concurrent_requests_each_see_their_own_event(tmp_path: Path) -> None:
    # Given one Powertools function
    functions = _functions(tmp_path)
    clients = 4
    barrier = threading.Barrier(clients)

    def call(client: int) -> Any:
        barrier.wait(timeout=10)
        answer = functions.invoke("EchoFunction", _event(client))
        return json.loads(answer["body"])["saw"]

    # When four clients call it at the same moment
    with ThreadPoolExecutor(clients) as pool:
        seen = list(pool.map(call, range(clients)))
    # Then every request was handled with its own body, not a neighbour's
    assert seen == list(range(clients))


def test_a_function_is_loaded_once_and_reused(tmp_path: Path) -> None:
    functions = _functions(tmp_path)
    for client in range(3):
        assert json.loads(functions.invoke("EchoFunction", _event(client))["body"]) == {"saw": client}
    container = functions.pools["EchoFunction"]
    module_globals = container.warm().__globals__
    assert module_globals["loads"] == [1]
