"""`make invoke FUNCTION=<logical id> EVENT=events/<file>.json`: one function, once, as `sam local invoke`
runs it (its answer alone on stdout, logs on stderr), against the local run's data, on every sample event."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests

from harness.gemini import GeminiDouble
from local.events import matches
from local.spawn import server_env
from local.template import Template, parse
from local.worker import to_json
from tests.e2e.conftest import E2E_JWT_SECRET, ROOT, LocalServer

EVENTS = sorted((ROOT / "events").glob("*.json"))
TEMPLATE: Template = parse(ROOT / "template.yaml")
VENV_STAMP = ROOT / ".venv" / ".installed"


def function_of(event: dict[str, Any]) -> str:
    """The function a sample event is for: the authorizer's, a rule's target, or a route's."""
    if event.get("type") == "REQUEST":
        assert TEMPLATE.authorizer is not None
        return TEMPLATE.authorizer.function
    if "detail-type" in event:
        [target] = [r.function for r in TEMPLATE.rules if matches(r.pattern, event)]
        return target
    if "Records" in event:  # a batch of a table's stream: that stream's trigger
        [target] = [s.function for s in TEMPLATE.streams if s.table == "MemoryTable"]
        return target
    method, path = event["routeKey"].split(" ", 1)
    [function] = [r.function for r in TEMPLATE.routes if (r.method, r.path) == (method, path)]
    return function


@pytest.fixture(scope="module")
def gemini() -> Iterator[GeminiDouble]:
    # providers_put.json stores alice's own Gemini key: her later calls go to GEMINI_BASE_URL, loopback
    double = GeminiDouble().start()
    yield double
    double.stop()


def invoke_env(data_dir: Path, gemini: GeminiDouble, **extra: str) -> dict[str, str]:
    env = server_env(0, str(data_dir), E2E_JWT_SECRET, GEMINI_BASE_URL=gemini.base_url, **extra)
    for name in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS"):  # (when the suite itself runs under make)
        env.pop(name, None)
    return env


def run_invoke(env: dict[str, str], function: str, event: Path | str) -> subprocess.CompletedProcess[bytes]:
    """`python -m local.invoke`, the module behind `make invoke`."""
    return subprocess.run(
        [sys.executable, "-m", "local.invoke", function, str(event)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=180,
    )


def make_invoke(env: dict[str, str], function: str, event: Path | str) -> subprocess.CompletedProcess[bytes]:
    """`make invoke` itself (its venv taken as installed: a test never runs pip)."""
    return subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-o",
            str(VENV_STAMP),
            "invoke",
            f"FUNCTION={function}",
            f"EVENT={event}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=180,
    )


def check_output(proc: subprocess.CompletedProcess[bytes]) -> Any:
    """The answer on stdout, exactly as sam local invoke prints it; the logs on stderr."""
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, err[-3000:]
    out = proc.stdout
    value = json.loads(out)
    # the JSON of Lambda's python3.13 runtime, and nothing else (no log line, no newline)
    assert out == to_json(value).encode(), out[:300]
    assert "START RequestId: " in err and "END RequestId: " in err and "REPORT RequestId: " in err
    return value


# --- every sample event, against a running server --------------------------------------------------------


@pytest.fixture(scope="module")
def invoke_server(tmp_path_factory: pytest.TempPathFactory, gemini: GeminiDouble) -> Iterator[LocalServer]:
    server = LocalServer(
        tmp_path_factory.mktemp("local-invoke") / "data",
        ROOT / "template.yaml",
        extra_env={"LOCAL_EMBEDDER": "none", "GEMINI_BASE_URL": gemini.base_url},
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def invoked(
    invoke_server: LocalServer, gemini: GeminiDouble
) -> dict[str, subprocess.CompletedProcess[bytes]]:
    """Every sample event invoked once (three at a time: each is a cold start of its own)."""
    env = invoke_env(invoke_server.data_dir, gemini, LOCAL_EMBEDDER="none")

    def one(path: Path) -> tuple[str, subprocess.CompletedProcess[bytes]]:
        event = json.loads(path.read_text(encoding="utf-8"))
        return path.name, run_invoke(env, function_of(event), path.relative_to(ROOT))

    with ThreadPoolExecutor(3) as pool:
        return dict(pool.map(one, EVENTS))


def test_every_sample_event_names_a_function() -> None:
    assert len(EVENTS) >= 30
    named = {function_of(json.loads(p.read_text(encoding="utf-8"))) for p in EVENTS}
    assert named == set(TEMPLATE.functions)  # and every function has a sample


@pytest.mark.parametrize("path", EVENTS, ids=lambda p: p.name)
def test_invoke_runs_the_sample_event_and_prints_the_answer_as_sam_does(
    path: Path, invoked: dict[str, subprocess.CompletedProcess[bytes]]
) -> None:
    proc = invoked[path.name]
    event = json.loads(path.read_text(encoding="utf-8"))
    value = check_output(proc)
    err = proc.stderr.decode(errors="replace")
    assert f"({function_of(event)}) against the running local server's data" in err
    if event.get("type") == "REQUEST":
        assert isinstance(value["isAuthorized"], bool)
    elif "detail-type" in event:
        assert not (isinstance(value, dict) and "errorType" in value), value
    elif "Records" in event:  # every record's events were put
        assert value == {"batchItemFailures": []}, value
    else:
        assert isinstance(value, dict) and "errorType" not in value, value
        assert 200 <= value["statusCode"] < 500, value
        if value["statusCode"] >= 400:
            body = json.loads(value["body"])
            assert set(body) == {"error"}, body


# --- the data: a run of its own, or the running server's -------------------------------------------------


def test_make_invoke_without_a_server_uses_and_keeps_data_dirs_data(
    tmp_path: Path, gemini: GeminiDouble
) -> None:
    data_dir = tmp_path / "data"
    env = invoke_env(data_dir, gemini, LOCAL_EMBEDDER="none")
    # Given a memory created by make invoke, with no server running
    created = check_output(make_invoke(env, "MemoryCreateFunction", "events/memory_create.json"))
    assert created["statusCode"] == 201
    memory = json.loads(created["body"])
    # When another make invoke reads it back
    get_event = json.loads((ROOT / "events" / "memory_get.json").read_text(encoding="utf-8"))
    event = copy.deepcopy(get_event)
    event["pathParameters"]["id"] = memory["id"]
    event["rawPath"] = event["requestContext"]["http"]["path"] = f"/memory/{memory['id']}"
    event_file = tmp_path / "get.json"
    event_file.write_text(json.dumps(event))
    proc = make_invoke(env, "MemoryGetFunction", event_file)
    # Then it is there (DATA_DIR's journal, replayed), and it said so on stderr
    got = check_output(proc)
    assert got["statusCode"] == 200 and json.loads(got["body"])["content"] == memory["content"]
    assert "(its journal replayed; no server is running on it)" in proc.stderr.decode()
    # and a server started on DATA_DIR serves it too
    server = LocalServer(data_dir, ROOT / "template.yaml", extra_env={"LOCAL_EMBEDDER": "none"})
    server.start()
    try:
        resp = requests.get(f"{server.url}/memory/{memory['id']}", headers=server.headers(), timeout=30)
        assert resp.status_code == 200 and resp.json()["content"] == memory["content"]
    finally:
        server.stop()


def test_make_invoke_with_a_server_running_writes_through_it(
    invoke_server: LocalServer, gemini: GeminiDouble
) -> None:
    env = invoke_env(invoke_server.data_dir, gemini, LOCAL_EMBEDDER="none")
    event = json.loads((ROOT / "events" / "memory_create_agent.json").read_text(encoding="utf-8"))
    body = json.loads(event["body"])
    proc = make_invoke(env, "MemoryCreateFunction", "events/memory_create_agent.json")
    created = check_output(proc)
    assert created["statusCode"] in (200, 201)
    assert "against the running local server's data" in proc.stderr.decode()
    # the server sees the write at once
    memory_id = json.loads(created["body"])["id"]
    resp = requests.get(
        f"{invoke_server.url}/memory/{memory_id}", headers=invoke_server.headers(), timeout=30
    )
    assert resp.status_code == 200 and resp.json()["content"] == body["content"]


def test_a_handler_error_is_printed_as_lambdas_error_object(tmp_path: Path, gemini: GeminiDouble) -> None:
    env = invoke_env(tmp_path / "data", gemini, LOCAL_EMBEDDER="none")
    # the summarizer with an event it cannot read (no detail): the handler raises
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"detail-type": "SessionSummaryDue", "source": "synapse.memory", "detail": {}}))
    value = check_output(run_invoke(env, "SummarizeSessionFunction", bad))
    assert set(value) == {"errorMessage", "errorType", "requestId", "stackTrace"}
    assert isinstance(value["stackTrace"], list)


def test_a_wrong_function_or_event_is_refused_with_nothing_on_stdout(
    tmp_path: Path, gemini: GeminiDouble
) -> None:
    env = invoke_env(tmp_path / "data", gemini)
    wrong = make_invoke(env, "NoSuchFunction", "events/health.json")
    assert wrong.returncode != 0 and wrong.stdout == b""
    assert "no function 'NoSuchFunction'" in wrong.stderr.decode()
    assert "HealthFunction" in wrong.stderr.decode()  # the ids it knows
    missing = run_invoke(env, "HealthFunction", tmp_path / "nope.json")
    assert missing.returncode == 2 and missing.stdout == b""
    usage = subprocess.run(
        ["make", "--no-print-directory", "-o", str(VENV_STAMP), "invoke"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert usage.returncode != 0 and usage.stdout == b""
    assert "usage: make invoke FUNCTION=" in usage.stderr.decode()
    assert not (tmp_path / "data" / "journal.jsonl").exists()
    assert os.environ.get("GEMINI_API_KEY") is None  # (nothing here reached for a real model)
