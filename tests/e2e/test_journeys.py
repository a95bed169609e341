"""The "Done when" journeys of the Foundation and Conversational memory issues, over real HTTP.

A new user starts `python -m local`, pastes the printed curl line, stores memories as a user and as
an agent, sees the upsert, the verification rule, the plain-text recall, Thai search and expiry
work; sends a Thai and English conversation to ingest and sees transient turns skipped, nuggets
created then updated, an identity line, a relevant recall and a summary after the 15th message;
reads the OpenAPI document and Swagger UI; gets the error envelope on every error. The Gemini path
runs on a second local server pointed at the Gemini HTTP double.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests

from harness.gemini import GeminiDouble
from harness.lambdas import template
from tests.e2e.conftest import ROOT, LocalServer

TIMEOUT = 60
SUMMARY_WAIT = 20.0
ISO_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")

THAI_AND_ENGLISH = [
    {"role": "user", "content": "สวัสดีครับ ผมชื่อสมชาย อยู่เชียงใหม่"},
    {"role": "assistant", "content": "ยินดีที่ได้รู้จักครับคุณสมชาย"},
    {"role": "user", "content": "I prefer dark theme in every editor"},
    {"role": "user", "content": "ขอบคุณ"},
    {"role": "user", "content": "555"},
    {"role": "user", "content": "thanks"},
    {
        "role": "user",
        "content": "We are migrating the billing service from Docker Swarm to Kubernetes next month",
    },
]


# --- helpers ----------------------------------------------------------------------------------


def uid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Api:
    """A tiny client of one server for one bearer token."""

    def __init__(self, server: LocalServer, token: str) -> None:
        self.server = server
        self.token = token

    def __call__(self, method: str, path: str, **kw: Any) -> requests.Response:
        headers = {"Authorization": f"Bearer {self.token}", **kw.pop("headers", {})}
        return requests.request(method, f"{self.server.url}{path}", headers=headers, timeout=TIMEOUT, **kw)

    def store(self, **body: Any) -> requests.Response:
        return self("POST", "/memory", json=body)


def error_of(resp: requests.Response, status: int, code: str) -> dict[str, Any]:
    """Asserts the contract's error envelope and returns its `error` object."""
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json"), resp.headers
    body = resp.json()
    assert set(body) == {"error"}, body
    err: dict[str, Any] = body["error"]
    assert set(err) <= {"code", "message", "details"}, err
    assert err["code"] == code, err
    assert isinstance(err["message"], str) and err["message"].strip(), err
    assert "Traceback" not in resp.text
    if "details" in err:
        assert isinstance(err["details"], list)
    return err


@pytest.fixture
def alice(local_server: LocalServer) -> Api:
    """The user whose JWT the server printed at start."""
    return Api(local_server, local_server.jwt)


@pytest.fixture
def new_user(local_server: LocalServer) -> Callable[[str], tuple[str, Api]]:
    """A fresh user (unique id) with a JWT signed by the server's secret."""

    def make(prefix: str = "user") -> tuple[str, Api]:
        user_id = uid(prefix)
        return user_id, Api(local_server, local_server.make_jwt(user_id))

    return make


def make_key(user: Api, scopes: list[str]) -> Api:
    resp = user("POST", "/keys", json={"name": uid("key"), "scopes": scopes})
    assert resp.status_code == 201, resp.text
    key = resp.json()
    assert key["key"].startswith("gts_live_") and sorted(key["scopes"]) == sorted(scopes)
    return Api(user.server, key["key"])


# --- Foundation: the first minutes of a new user ------------------------------------------------


def test_the_printed_curl_line_answers(local_server: LocalServer) -> None:
    # Given the curl line the server printed at start (the last one, if it was restarted)
    lines = [ln.strip() for ln in local_server.logs().splitlines() if ln.strip().startswith("curl ")]
    assert lines, "no curl line was printed"
    line = lines[-1]
    assert local_server.url in line and local_server.jwt in line
    args = shlex.split(line)

    # When a new user pastes it
    if shutil.which("curl"):
        done = subprocess.run(
            [*args, "-w", "\n%{http_code}"], capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
        body, _, status = done.stdout.rpartition("\n")
        status_code = int(status)
    else:  # no curl here: send exactly what the line says
        headers = dict(h.split(": ", 1) for h in (args[i + 1] for i, a in enumerate(args) if a == "-H"))
        data = args[args.index("-d") + 1]
        resp = requests.post(args[-1], data=data.encode(), headers=headers, timeout=TIMEOUT)
        body, status_code = resp.text, resp.status_code

    # Then they get an answer: the memory they stored (201 the first time, 200 after)
    assert status_code in (200, 201), body
    memory = json.loads(body)
    assert memory["key"] == "ui_theme" and memory["category"] == "preference"
    assert memory["source"] == "user" and memory["verified"] is True


def test_a_user_and_agents_store_memories(local_server: LocalServer, alice: Api) -> None:
    key = uid("journey").replace("-", "_")
    # Given the printed API key (alice's agent) and a read-only key alice makes herself
    assert local_server.api_key
    agent = Api(local_server, local_server.api_key)
    reader = make_key(alice, ["memory:read"])

    # When alice stores a memory
    mine = alice.store(category="fact", key=f"{key}_user", content="I run Synapse on vps1", tags=["Ops"])
    assert mine.status_code == 201, mine.text
    m = mine.json()
    # Then it is hers, verified, full confidence, tags normalised, timestamps in UTC with a Z
    assert (m["user_id"], m["source"], m["verified"], m["confidence"]) == ("alice", "user", True, 1.0)
    assert m["tags"] == ["ops"] and m["priority"] == "normal" and m["expires_at"] is None
    assert ISO_Z.match(m["created_at"]) and ISO_Z.match(m["updated_at"])

    # When her agent stores one
    theirs = agent.store(category="project", key=f"{key}_agent", content="Synapse v1.5.0 deployed")
    assert theirs.status_code == 201, theirs.text
    a = theirs.json()
    # Then it is written for alice as the agent's: unverified, lower confidence
    assert (a["user_id"], a["source"], a["verified"], a["confidence"]) == ("alice", "agent", False, 0.7)

    # And the read-only key reads both but cannot write
    for mem in (m, a):
        got = reader("GET", f"/memory/{mem['id']}")
        assert got.status_code == 200 and got.json()["content"] == mem["content"]
    error_of(reader.store(category="note", key=f"{key}_ro", content="nope"), 403, "forbidden")
    # and an agent cannot make keys (user only)
    error_of(agent("POST", "/keys", json={"name": "x", "scopes": ["memory:read"]}), 403, "forbidden")


def test_storing_the_same_key_again_updates_the_memory(new_user: Callable[..., tuple[str, Api]]) -> None:
    _, user = new_user("upsert")
    # Given a stored memory
    first = user.store(category="preference", key="ui_theme", content="Prefers light theme")
    assert first.status_code == 201, first.text
    time.sleep(1.1)  # so updated_at can differ at one-second resolution

    # When the same (category, key) is stored again
    second = user.store(category="preference", key="ui_theme", content="Prefers dark theme", priority="high")

    # Then it is an update of the same memory: 200, same id, created_at kept
    assert second.status_code == 200, second.text
    a, b = first.json(), second.json()
    assert b["id"] == a["id"]
    assert b["created_at"] == a["created_at"]
    assert b["updated_at"] > a["updated_at"]
    assert (b["content"], b["priority"]) == ("Prefers dark theme", "high")
    # and there is still only one memory
    listed = user("GET", "/memory", params={"category": "preference"}).json()["memories"]
    assert [x["id"] for x in listed] == [a["id"]]
    # the same key in another category is another memory
    other = user.store(category="note", key="ui_theme", content="theme notes")
    assert other.status_code == 201 and other.json()["id"] != a["id"]


def test_the_verification_rule(new_user: Callable[..., tuple[str, Api]]) -> None:
    _, user = new_user("verify")
    agent = make_key(user, ["memory:read", "memory:write"])
    # Given a memory an agent wrote: unverified
    wrote = agent.store(category="fact", key="db_engine", content="Uses DynamoDB")
    assert wrote.status_code == 201
    mem = wrote.json()
    assert (mem["source"], mem["verified"]) == ("agent", False)

    # When the agent tries to verify it, Then it is refused
    error_of(agent("POST", f"/memory/{mem['id']}/verify"), 403, "forbidden")
    assert user("GET", f"/memory/{mem['id']}").json()["verified"] is False

    # When the user verifies it, Then it is verified
    ok = user("POST", f"/memory/{mem['id']}/verify")
    assert ok.status_code == 200, ok.text
    assert ok.json()["verified"] is True

    # When the agent changes it (PUT, or storing the same key), Then it is unverified again
    put = agent("PUT", f"/memory/{mem['id']}", json={"content": "Uses DynamoDB on-demand"})
    assert put.status_code == 200, put.text
    assert put.json()["verified"] is False
    assert user("POST", f"/memory/{mem['id']}/verify").json()["verified"] is True
    again = agent.store(category="fact", key="db_engine", content="Uses DynamoDB with PITR")
    assert again.status_code == 200 and again.json()["verified"] is False
    # and a user's own update keeps it verified
    mine = user("PUT", f"/memory/{mem['id']}", json={"content": "Uses DynamoDB"})
    assert mine.json()["verified"] is True


def test_the_plain_text_recall(new_user: Callable[..., tuple[str, Api]]) -> None:
    user_id, user = new_user("text")
    agent = make_key(user, ["memory:read", "memory:write"])
    # Given the two memories of API.md's example, one by the user and one by an agent
    assert (
        agent.store(
            category="project",
            key="synapse_status",
            content="v1.5.0 deployed, working on v1.6.0 docs",
            tags=["synapse", "deployment"],
            priority="high",
        ).status_code
        == 201
    )
    assert (
        user.store(
            category="identity",
            key="user_name",
            content="Michael Schäfer",
            tags=["person", "identity"],
            priority="critical",
        ).status_code
        == 201
    )

    # When the plain-text recall is read
    resp = user("GET", "/memory/recall")

    # Then it is exactly API.md's format, sorted by priority
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain")
    assert "charset=utf-8" in resp.headers["content-type"].lower()
    expected = (
        f"Mind: {user_id}\n"
        "Memories: 2 total (1 verified, 1 unverified)\n"
        "\n"
        "[001] identity (CRITICAL) [verified] user_name\n"
        "    Michael Schäfer\n"
        "    Tags: person, identity\n"
        "\n"
        "[002] project (HIGH) [unverified] synapse_status\n"
        "    v1.5.0 deployed, working on v1.6.0 docs\n"
        "    Tags: synapse, deployment\n"
    )
    assert resp.content.decode("utf-8").rstrip("\n") == expected.rstrip("\n")
    # filters and limit apply
    only = user("GET", "/memory/recall", params={"category": "project"}).text
    assert "synapse_status" in only and "user_name" not in only
    first = user("GET", "/memory/recall", params={"limit": "1"}).text
    assert "[001] identity" in first and "[002]" not in first


def test_thai_search_finds_a_word_inside_a_sentence(new_user: Callable[..., tuple[str, Api]]) -> None:
    _, user = new_user("thai")
    # Given Thai sentences (no spaces between words) and an English one
    rice = user.store(
        category="preference", key="favourite_food", content="ผมชอบกินข้าวมันไก่ที่ร้านใกล้บ้านทุกวันเสาร์"
    ).json()
    user.store(category="fact", key="home_town", content="บ้านเกิดของผมอยู่ที่จังหวัดเชียงราย")
    user.store(category="note", key="editor", content="Uses neovim with a dark theme")

    # When searching for a Thai word that sits inside a sentence
    resp = user("GET", "/memory/search", params={"q": "ข้าวมันไก่"})

    # Then the sentence containing it comes first, with a score
    assert resp.status_code == 200, resp.text
    hits = resp.json()["memories"]
    assert hits and hits[0]["id"] == rice["id"]
    assert isinstance(hits[0]["score"], float) and hits[0]["score"] > 0
    assert all(h["key"] != "editor" for h in hits)
    town = user("GET", "/memory/search", params={"q": "เชียงราย"}).json()["memories"]
    assert town and town[0]["key"] == "home_town"


def test_expired_memories_are_hidden_but_kept(new_user: Callable[..., tuple[str, Api]]) -> None:
    _, user = new_user("expiry")
    now = datetime.now(UTC)
    soon_at = (now + timedelta(seconds=8)).replace(microsecond=0)
    soon = soon_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    later = (now + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    # Given a memory that expires in a few seconds, one that expires in two days, and one that never does
    short = user.store(
        category="context",
        key="deploy_window",
        content="Deploy window open tonight",
        tags=["ops"],
        expires_at=soon,
    )
    assert short.status_code == 201, short.text
    assert short.json()["expires_at"] == soon
    user.store(
        category="context",
        key="maint_window",
        content="Maintenance window Friday",
        tags=["ops"],
        expires_at=later,
    )
    user.store(category="fact", key="deploy_tool", content="Deploys with sam deploy", tags=["ops"])
    expiring = user("GET", "/memory/expiring", params={"within": "7d"}).json()["memories"]
    assert [m["key"] for m in expiring] == ["deploy_window", "maint_window"]  # soonest first

    # When it has expired
    time.sleep(max((soon_at - datetime.now(UTC)).total_seconds(), 0) + 1.5)

    # Then no read returns it
    def keys(resp: requests.Response) -> set[str]:
        assert resp.status_code == 200, resp.text
        return {m["key"] for m in resp.json()["memories"]}

    assert keys(user("GET", "/memory")) == {"maint_window", "deploy_tool"}
    assert keys(user("GET", "/memory/by-tag", params={"tag": "OPS"})) == {"maint_window", "deploy_tool"}
    assert "deploy_window" not in keys(user("GET", "/memory/search", params={"q": "deploy window"}))
    assert "deploy_window" not in keys(user("POST", "/memory/recall", json={"query": "deploy window"}))
    assert "deploy_window" not in user("GET", "/memory/recall").text
    assert keys(user("GET", "/memory/expiring", params={"within": "7d"})) == {"maint_window"}
    # but it is kept: storing the key again updates it (200), it is not a new memory
    again = user.store(category="context", key="deploy_window", content="Deploy window moved")
    assert again.status_code == 200
    assert again.json()["id"] == short.json()["id"]


# --- Conversational memory: ingest, identity, recall, summaries ----------------------------------


def test_a_chat_front_end_tells_retries_from_repeated_turns_with_an_idempotency_key(
    new_user: Callable[..., tuple[str, Api]],
) -> None:
    _, user = new_user("idem")
    session = uid("s")
    body = {"sessionId": session, "messages": [{"role": "user", "content": "ใช่ ผมย้ายไปภูเก็ตแล้วครับ"}]}

    def send(key: str, payload: dict[str, Any] = body) -> requests.Response:
        return user("POST", "/memory/ingest", json=payload, headers={"Idempotency-Key": key})

    # the same turn said twice: two keys, two ingests; a retry of the first: its first answer
    first, second, retry = send("t1"), send("t2"), send("t1")
    assert first.status_code == second.status_code == retry.status_code == 200, (first.text, second.text)
    assert retry.json() == first.json()
    export = user("GET", "/me/export").json()
    [stored] = [s for s in export["sessions"] if s["session_id"] == session]
    assert stored["msg_count"] == 2, stored
    # a key reused with another body is refused in the envelope
    other = send("t1", {"sessionId": session, "messages": [{"role": "user", "content": "something else"}]})
    assert error_of(other, 422, "validation_error")["details"][0]["loc"] == ["header", "idempotency-key"]


def test_a_thai_and_english_conversation_is_remembered(
    local_server: LocalServer, new_user: Callable[..., tuple[str, Api]]
) -> None:
    user_id, user = new_user("chat")
    session = uid("s")

    def ingest(messages: list[dict[str, str]]) -> dict[str, Any]:
        resp = user("POST", "/memory/ingest", json={"sessionId": session, "messages": messages})
        assert resp.status_code == 200, resp.text
        out: dict[str, Any] = resp.json()
        return out

    # When a Thai and English conversation is ingested (no Gemini key: the local embedder and rules)
    first = ingest(THAI_AND_ENGLISH)

    # Then the chatter is skipped and counted, and nuggets are created, in the user's language
    assert first["skipped_transient"] == 3
    assert first["nuggets_created"] >= 3 and first["nuggets_updated"] == 0
    assert first["identity_updated"] is True
    assert len(first["nuggets"]) == first["nuggets_created"]
    by_key = {n["key"]: n for n in first["nuggets"]}
    assert "สมชาย" in json.dumps(first["nuggets"], ensure_ascii=False)
    assert {(n["source"], n["verified"]) for n in first["nuggets"]} == {("agent", False)}
    location = next(n for n in first["nuggets"] if "เชียงใหม่" in n["content"])
    count_before = len(user("GET", "/memory", params={"limit": "100"}).json()["memories"])
    assert count_before == len(by_key)

    # and the identity line says who the user is
    ident = user("GET", f"/memory/identity/{user_id}")
    assert ident.status_code == 200, ident.text
    assert ident.json()["userId"] == user_id
    assert "สมชาย" in ident.json()["identity"] and "เชียงใหม่" in ident.json()["identity"]

    # When a fact changes
    moved = ingest([{"role": "user", "content": "I live in Bangkok now"}])

    # Then its nugget is updated, not duplicated, and the identity line follows
    assert (moved["nuggets_created"], moved["nuggets_updated"]) == (0, 1), moved
    assert moved["nuggets"][0]["id"] == location["id"]
    assert "Bangkok" in moved["nuggets"][0]["content"]
    assert len(user("GET", "/memory", params={"limit": "100"}).json()["memories"]) == count_before
    line = user("GET", f"/memory/identity/{user_id}").json()["identity"]
    assert "Bangkok" in line and "เชียงใหม่" not in line and "สมชาย" in line

    # When the user's agent recalls for a question, Then the relevant memory comes first, with identity
    recall = user("POST", "/memory/recall", json={"query": "Kubernetes migration of billing", "limit": 3})
    assert recall.status_code == 200, recall.text
    out = recall.json()
    top = out["memories"][0]
    assert "Kubernetes" in top["text"]
    assert set(top) == {
        "id",
        "text",
        "type",
        "key",
        "score",
        "priority",
        "verified",
        "created_at",
        "valid_at",
    }
    assert len(out["memories"]) <= 3 and "Bangkok" in out["identity"]
    theme = user("POST", "/memory/recall", json={"query": "which editor theme?", "limit": 1}).json()
    assert "dark theme" in theme["memories"][0]["text"]

    # Given 8 messages so far in the session, When it reaches 14: no summary yet
    ingest(
        [{"role": "user", "content": f"Note {i}: the staging cluster needs {i} more nodes"} for i in range(6)]
    )
    summaries = user("GET", f"/memory/summaries/{session}")
    assert summaries.status_code == 200 and summaries.json() == {"summaries": []}

    # When the 15th message arrives, Then a summary appears (the bus delivers in the background)
    ingest([{"role": "user", "content": "The billing cutover is planned for the first Monday of March"}])
    deadline = time.monotonic() + SUMMARY_WAIT
    found: list[dict[str, Any]] = []
    while time.monotonic() < deadline and not found:
        found = user("GET", f"/memory/summaries/{session}").json()["summaries"]
        if not found:
            time.sleep(0.5)
    assert found, f"no summary within {SUMMARY_WAIT}s:\n{local_server.logs()[-3000:]}"
    assert len(found) == 1
    chunk = found[0]
    # chunk N = 1 (the service writes N with four digits, as DESIGN.md's data layout does)
    assert re.fullmatch(rf"sum:{re.escape(session)}:chunk_1", chunk["chunk_id"]), chunk
    assert chunk["msg_count"] == 15 and chunk["summary"].strip()
    assert ISO_Z.match(chunk["created_at"])


# --- the documents ----------------------------------------------------------------------------


def template_routes() -> set[tuple[str, str]]:
    routes = set()
    for res in template()["Resources"].values():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        for event in (res.get("Properties", {}).get("Events") or {}).values():
            if event.get("Type") == "HttpApi":
                props = event["Properties"]
                routes.add((props["Method"].lower(), props["Path"]))
    return routes


DOC_ROUTES = {("get", "/openapi.json"), ("get", "/docs")}
# the console's page and files: for people, not API clients, so deliberately not in the document
CONSOLE_ROUTES = {("get", "/console"), ("get", "/console/{asset}")}


def documented_routes(server: LocalServer) -> set[tuple[str, str]]:
    resp = requests.get(f"{server.url}/openapi.json", timeout=TIMEOUT)  # public: no token
    assert resp.status_code == 200, resp.text
    doc = resp.json()
    assert str(doc["openapi"]).startswith("3.")
    return {(method, path) for path, ops in doc["paths"].items() for method in ops if method != "parameters"}


def test_openapi_lists_every_api_route_of_the_template_and_docs_serve_swagger_ui(
    local_server: LocalServer,
) -> None:
    # When anyone (no token) reads the OpenAPI document
    documented = documented_routes(local_server)
    # Then it lists every route of template.yaml (the two document routes: see the next test), but
    # the console's
    expected = template_routes()
    assert len(expected) >= 26  # API.md's routes
    assert expected >= CONSOLE_ROUTES
    assert expected - DOC_ROUTES - CONSOLE_ROUTES <= documented, sorted(expected - DOC_ROUTES - documented)
    assert documented <= expected - CONSOLE_ROUTES, sorted(documented - expected)

    # and /docs serves Swagger UI
    docs = requests.get(f"{local_server.url}/docs", timeout=TIMEOUT)
    assert docs.status_code == 200
    assert docs.headers["content-type"].startswith("text/html")
    assert "swagger-ui" in docs.text.lower()


def test_openapi_also_documents_its_own_routes(local_server: LocalServer) -> None:
    assert documented_routes(local_server) >= DOC_ROUTES


def test_every_error_answer_has_the_envelope(
    local_server: LocalServer, new_user: Callable[..., tuple[str, Api]]
) -> None:
    user_id, user = new_user("errors")
    url = local_server.url
    kept = user.store(category="note", key="kept", content="the only memory").json()
    # 401: no token, a bad token, an expired token
    error_of(requests.get(f"{url}/memory", timeout=TIMEOUT), 401, "unauthorized")
    error_of(Api(local_server, "not-a-token")("GET", "/memory"), 401, "unauthorized")
    expired = local_server.make_jwt(user_id, days=-1)
    error_of(Api(local_server, expired)("GET", "/memory"), 401, "unauthorized")
    # 400: malformed JSON; nothing is written
    bad = user(
        "POST", "/memory", data=b'{"category": "note", "key": ', headers={"content-type": "application/json"}
    )
    error_of(bad, 400, "invalid_json")
    # 422: validation, with details
    err = error_of(user.store(category="nope", key="Bad Key!", content="x"), 422, "validation_error")
    assert err["details"] and all({"loc", "msg"} <= set(d) for d in err["details"])
    error_of(user("PUT", f"/memory/{kept['id']}", json={"key": "other"}), 422, "validation_error")
    error_of(user("POST", "/memory/recall", json={"query": "x", "limit": 51}), 422, "validation_error")
    error_of(
        user("POST", "/memory/ingest", json={"sessionId": "a:b", "messages": []}), 422, "validation_error"
    )
    # 413: a body over 256 KiB
    big = user.store(category="note", key="big", content="x" * (300 * 1024))
    error_of(big, 413, "payload_too_large")
    # 403: another user's data, a user-only route for an agent
    error_of(user.store(userId="someone-else", category="note", key="k", content="x"), 403, "forbidden")
    error_of(user("GET", "/memory/identity/someone-else"), 403, "forbidden")
    agent = make_key(user, ["memory:read"])
    error_of(agent("GET", "/keys"), 403, "forbidden")
    error_of(agent("GET", "/me/export"), 403, "forbidden")
    # 404: an unknown memory, route and method
    error_of(user("GET", f"/memory/{uuid.uuid4()}"), 404, "not_found")
    error_of(user("DELETE", f"/memory/{uuid.uuid4()}"), 404, "not_found")
    error_of(user("GET", "/nowhere"), 404, "not_found")
    # nothing above was written
    assert user("GET", "/memory").json()["memories"] == [kept]


# --- the Gemini path, against the local double ----------------------------------------------------

GEMINI_NUGGETS = {
    "nuggets": [
        {
            "category": "identity",
            "key": "user_name",
            "content": "ชื่อ สมชาย",
            "tags": ["name"],
            "priority": "normal",
            "confidence": 0.9,
            "is_identity": True,
        },
        {
            "category": "project",
            "key": "billing_migration",
            "content": "Migrating billing from Docker Swarm to Kubernetes",
            "tags": ["k8s"],
            # the double's vectors are noise (seeded by the text): with two memories, the dense
            # signal is a coin flip; BM25 picks the project, and the priority nudge settles a tie
            "priority": "high",
            "confidence": 0.8,
            "is_identity": False,
        },
    ]
}


@pytest.fixture(scope="module")
def gemini() -> Iterator[GeminiDouble]:
    double = GeminiDouble().start()
    yield double
    double.stop()


@pytest.fixture(scope="module")
def gemini_server(tmp_path_factory: pytest.TempPathFactory, gemini: GeminiDouble) -> Iterator[LocalServer]:
    """A second `python -m local`, with a (fake) Gemini key and Gemini calls sent to the double."""
    server = LocalServer(
        tmp_path_factory.mktemp("local-gemini") / "data",
        ROOT / "template.yaml",
        extra_env={
            "GEMINI_API_KEY": "fake-gemini-key",
            "GEMINI_BASE_URL": gemini.base_url,
            "GEMINI_TIMEOUT_MS": "2000",
            "GEMINI_ATTEMPTS": "2",
            "GEMINI_RETRY_INITIAL_DELAY": "0.01",
            "GEMINI_RETRY_MAX_DELAY": "0.05",
        },
    )
    server.start()
    yield server
    server.stop()


def test_with_a_gemini_key_ingest_and_recall_go_through_gemini(
    gemini_server: LocalServer, gemini: GeminiDouble
) -> None:
    gemini.reset()
    gemini.generate = lambda body: json.dumps(GEMINI_NUGGETS, ensure_ascii=False)
    user_id = uid("gem")
    user = Api(gemini_server, gemini_server.make_jwt(user_id))

    # When a Thai and English conversation is ingested
    resp = user("POST", "/memory/ingest", json={"sessionId": uid("s"), "messages": THAI_AND_ENGLISH})

    # Then the model extracted the nuggets: one generateContent and one batched embedding
    assert resp.status_code == 200, resp.text
    out = resp.json()
    assert out["skipped_transient"] == 3
    assert {n["key"] for n in out["nuggets"]} == {"user_name", "billing_migration"}
    assert out["nuggets_created"] == 2 and out["identity_updated"] is True
    assert len(gemini.calls("generateContent")) == 1
    embeds = gemini.calls("batchEmbedContents")
    assert len(embeds) == 1 and len(embeds[0].embedded_texts()) == 2
    assert {r.get("outputDimensionality") for r in embeds[0].body["requests"]} == {768}
    prompt = json.dumps(gemini.calls("generateContent")[0].body, ensure_ascii=False)
    assert "สมชาย" in prompt and "Kubernetes" in prompt
    assert all(r.headers.get("x-goog-api-key") == "fake-gemini-key" for r in gemini.requests)

    # When the agent recalls, Then the query is embedded by Gemini too and the project comes first
    recall = user("POST", "/memory/recall", json={"query": "Kubernetes billing migration"})
    assert recall.status_code == 200, recall.text
    assert recall.json()["memories"][0]["key"] == "billing_migration"
    assert "สมชาย" in (recall.json()["identity"] or "")
    assert len(gemini.calls("batchEmbedContents")) == 2
    assert len(gemini.calls("generateContent")) == 1
    ident = user("GET", f"/memory/identity/{user_id}").json()
    assert "สมชาย" in ident["identity"]


def test_when_gemini_stays_down_ingest_is_503_with_retry_after(
    gemini_server: LocalServer, gemini: GeminiDouble
) -> None:
    gemini.reset()
    gemini.generate = lambda body: json.dumps(GEMINI_NUGGETS, ensure_ascii=False)
    user = Api(gemini_server, gemini_server.make_jwt(uid("down")))
    gemini.fail_next(20, 503)
    try:
        resp = user(
            "POST",
            "/memory/ingest",
            json={
                "sessionId": uid("s"),
                "messages": [{"role": "user", "content": "I work at Acme as an SRE"}],
            },
        )
        err = error_of(resp, 503, "upstream_unavailable")
        assert resp.headers.get("Retry-After"), resp.headers
        assert "fake-gemini-key" not in json.dumps(err)
    finally:
        gemini.reset()
