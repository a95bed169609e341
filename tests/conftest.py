"""Fixtures for every suite: a clean environment, moto tables from template.yaml, function calls."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from harness.gemini import GeminiDouble, running_double
from harness.lambdas import SNAPSHOT_BUCKET, LambdaContext, create_aws, http_event, load_function
from synapse.core import state
from synapse.core.config import settings

TABLE = "synapse-memory-test"
IDEMPOTENCY = "synapse-idempotency-test"


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test starts from the same settings, with no real AWS and no Gemini key."""
    for name in ("GEMINI_API_KEY", "GEMINI_BASE_URL", "JWT_JWKS_URL", "JWT_ISSUER", "JWT_AUDIENCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("MEMORY_TABLE", TABLE)
    monkeypatch.setenv("IDEMPOTENCY_TABLE", IDEMPOTENCY)
    monkeypatch.setenv("EVENT_BUS_NAME", "MemoryBus")
    monkeypatch.setenv("SNAPSHOT_BUCKET", SNAPSHOT_BUCKET)
    monkeypatch.setenv("JWT_SECRET", "test-secret-that-is-long-enough-for-hs256")
    monkeypatch.setenv("LOCAL_EMBEDDER", "none")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "synapse")
    settings.cache_clear()
    state.reset()
    yield
    settings.cache_clear()
    state.reset()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """moto with the tables created from template.yaml's own definitions, the bus and the KMS key."""
    with mock_aws():
        monkeypatch.setenv("KMS_KEY_ID", create_aws(TABLE, IDEMPOTENCY, "MemoryBus"))
        state.reset()
        yield boto3.client("dynamodb")


@pytest.fixture
def gemini_double(monkeypatch: pytest.MonkeyPatch) -> Iterator[GeminiDouble]:
    """The Gemini REST double (harness/gemini.py), running, with GEMINI_* pointing the client at it."""
    with running_double(monkeypatch) as double:
        yield double


Call = Callable[..., dict[str, Any]]


@pytest.fixture
def call(aws: Any) -> Call:
    """call("memory_create", "POST", "/memory", body=..., who=...) → the handler's answer, body parsed."""
    loaded: dict[str, Any] = {}

    def _call(function: str, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        if function not in loaded:
            loaded[function] = load_function(function)
        answer: dict[str, Any] = loaded[function].handler(http_event(method, path, **kwargs), LambdaContext())
        headers = {k.lower(): v for k, v in (answer.get("headers") or {}).items()}
        answer["headers"] = headers
        text = answer.get("body") or ""
        answer["json"] = (
            json.loads(text)
            if text and headers.get("content-type", "").startswith("application/json")
            else None
        )
        return answer

    return _call
