"""No secrets in logs: a whole session's logs hold no JWT, API key, provider key or message content.

Every request goes through the authorizer and the handler with its real Authorization header (as
API Gateway sends it), on the happy path and on failing ones (Gemini down, a bad token, a bad body),
and both the Powertools JSON lines on stdout and the records of Python logging are searched.
"""

from __future__ import annotations

import io
import json
import logging
import time
from typing import Any

import jwt
import pytest

from harness.gemini import GeminiDouble
from harness.lambdas import LambdaContext, load_function, sample_event
from synapse.core.observability import logger
from tests.conftest import Call

SECRET = "test-secret-that-is-long-enough-for-hs256"
PROVIDER_KEY = "AIzaSyD-logs-test-provider-key-0123456789"
CONTENT = [
    "My secret diagnosis is hypothyroidism-7Q",
    "The wifi password is corn-flakes-4471",
    "รหัสผ่านธนาคารของฉันคือ ม้าลาย-99",
]
LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}


class Session:
    """A client's session: authorizer, then the route's handler, with the real header."""

    def __init__(self, call: Call) -> None:
        self.call = call
        self.authorizer = load_function("authorizer")

    def send(self, token: str, function: str, method: str, path: str, **kw: Any) -> dict[str, Any]:
        event = sample_event("authorizer")
        event["headers"] = {"authorization": f"Bearer {token}"}
        event["identitySource"] = [f"Bearer {token}"]
        context = self.authorizer.handler(event, LambdaContext())["context"]
        return self.call(
            function, method, path, who=context, headers={"authorization": f"Bearer {token}"}, **kw
        )


def stdout_records(text: str) -> list[dict[str, Any]]:
    records = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                records.append(json.loads(line))
            except ValueError:
                records.append({"level": "INFO", "message": line})
        elif line:
            records.append({"level": "INFO", "message": line})  # anything else counts as loud
    return records


def test_a_whole_session_logs_no_secret_and_no_content(
    call: Call,
    aws: Any,
    gemini_double: GeminiDouble,
    capfd: pytest.CaptureFixture[str],
    caplog: Any,
    request: pytest.FixtureRequest,
) -> None:
    caplog.set_level(logging.DEBUG)
    # the Powertools logger's JSON lines, as its own handler formats them (its stream was bound at import)
    powertools = io.StringIO()
    handler = logging.StreamHandler(powertools)
    handler.setFormatter(logger.registered_formatter)
    logger.addHandler(handler)
    request.addfinalizer(lambda: logger.removeHandler(handler))
    token = jwt.encode({"sub": "alice", "exp": int(time.time()) + 600}, SECRET, algorithm="HS256")
    session = Session(call)
    gemini_double.generate = lambda body: json.dumps(
        {
            "nuggets": [
                {
                    "category": "fact",
                    "key": "wifi_password",
                    "content": CONTENT[1],
                    "tags": ["home"],
                    "priority": "high",
                    "confidence": 0.9,
                    "is_identity": False,
                }
            ]
        },
        ensure_ascii=False,
    )
    messages = [{"role": "user", "content": c} for c in CONTENT]

    # Given a full session: keys, a provider key, memories, ingest, recall, export, failures, deletion
    created = session.send(
        token, "keys_create", "POST", "/keys", body={"name": "bot", "scopes": ["memory:read", "memory:write"]}
    )
    assert created["statusCode"] == 201
    api_key = created["json"]["key"]
    put = session.send(
        token,
        "providers_put",
        "PUT",
        "/providers/gemini",
        route="/providers/{provider}",
        path_params={"provider": "gemini"},
        body={"api_key": PROVIDER_KEY},
    )
    assert put["statusCode"] == 200
    made = session.send(
        api_key,
        "memory_create",
        "POST",
        "/memory",
        body={"category": "fact", "key": "diagnosis", "content": CONTENT[0]},
    )
    assert made["statusCode"] == 201, made["body"]
    assert (
        session.send(
            api_key, "memory_ingest", "POST", "/memory/ingest", body={"sessionId": "s1", "messages": messages}
        )["statusCode"]
        == 200
    )
    assert (
        session.send(token, "memory_recall", "POST", "/memory/recall", body={"query": CONTENT[1]})[
            "statusCode"
        ]
        == 200
    )
    assert session.send(token, "memory_recall_text", "GET", "/memory/recall")["statusCode"] == 200
    assert (
        session.send(token, "memory_search", "GET", "/memory/search", query={"q": "wifi"})["statusCode"]
        == 200
    )
    assert (
        session.send(token, "memory_summarize", "POST", "/memory/summarize", body={"sessionId": "s1"})[
            "statusCode"
        ]
        == 200
    )
    # failing paths log too: Gemini down (503), a body that is not JSON, a revoked key, a wrong scope
    gemini_double.fail_next(3, 503)
    down = session.send(
        token, "memory_ingest", "POST", "/memory/ingest", body={"sessionId": "s2", "messages": messages}
    )
    assert down["statusCode"] == 503
    bad = session.send(token, "memory_create", "POST", "/memory", raw_body='{"content": "' + CONTENT[2] + '"')
    assert bad["statusCode"] == 400
    invalid = session.send(
        token,
        "memory_create",
        "POST",
        "/memory",
        body={"category": "nope", "key": "k", "content": CONTENT[2]},
    )
    assert invalid["statusCode"] == 422
    assert session.send(token, "me_export", "GET", "/me/export")["statusCode"] == 200
    key_id = created["json"]["key_id"]
    assert (
        session.send(
            token,
            "keys_delete",
            "DELETE",
            f"/keys/{key_id}",
            route="/keys/{keyId}",
            path_params={"keyId": key_id},
        )["statusCode"]
        == 204
    )
    assert session.send(api_key, "memory_list", "GET", "/memory")["statusCode"] == 401
    assert session.send(token, "me_delete", "DELETE", "/me")["statusCode"] == 200

    # When the logs are read
    out = capfd.readouterr()
    records = stdout_records(powertools.getvalue() + "\n" + out.out + "\n" + out.err)
    loud_stdout = [r for r in records if LEVELS.get(str(r.get("level", "INFO")).upper(), 20) >= logging.INFO]
    loud_python = [
        json.dumps({k: str(v) for k, v in vars(r).items()}, ensure_ascii=False)
        for r in caplog.records
        if r.levelno >= logging.INFO
    ]
    # Then something was logged (the check below is not vacuous) ...
    assert loud_stdout and loud_python
    assert any(r.get("error_code") == "upstream_unavailable" for r in loud_stdout)
    # ... and none of it holds a secret or a word the user said
    secrets = {
        "the JWT": token,
        "the JWT's signature": token.rsplit(".", 1)[1],
        "the API key": api_key,
        "the API key's body": api_key[len("gts_live_") :],
        "the provider key": PROVIDER_KEY,
        "the JWT secret": SECRET,
        **{f"message {i}": c for i, c in enumerate(CONTENT)},
        "a fragment of a message": "hypothyroidism",
        "a Thai fragment": "ม้าลาย",
    }
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in loud_stdout) + "\n".join(loud_python)
    found = [name for name, value in secrets.items() if value in text]
    assert not found, f"logged at INFO or above: {found}"
