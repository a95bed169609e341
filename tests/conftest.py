"""Fixtures for every suite: a clean environment, moto tables from template.yaml, function calls."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import botocore.loaders
import botocore.session
import pytest
from moto import mock_aws
from moto.kms import models as kms_models

from harness.gemini import GeminiDouble, running_double
from harness.lambdas import SNAPSHOT_BUCKET, LambdaContext, create_aws, http_event, load_function
from synapse.core import state
from synapse.core.config import settings

TABLE = "synapse-memory-test"
IDEMPOTENCY = "synapse-idempotency-test"


_figures: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Figures a test measured (`record_property("figure", text)`), gathered from every xdist worker."""
    if report.when == "call":
        _figures.extend(str(value) for name, value in report.user_properties if name == "figure")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _figures:
        terminalreporter.section("figures measured by the tests")
        for line in _figures:
            terminalreporter.write_line(line)


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


@pytest.fixture(scope="session", autouse=True)
def one_botocore_loader() -> Iterator[None]:
    """One botocore data loader for the run: its JSON models are read once, not once a test.

    The service makes one botocore session per container (`state.reset()`, i.e. every test), and moto
    resets boto3's default session on every `mock_aws()`: each new session read endpoints.json and
    the service models again (~0.1 s of CPU a session). The loader only reads files that never change
    during a run and hands out what it read; botocore already shares it within a session.
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(botocore.session, "create_loader", functools.cache(botocore.loaders.create_loader))
        yield


_stock_private_key = kms_models.generate_private_key


@functools.cache
def _symmetric_keys_private_key(key_spec: str) -> Any:
    return _stock_private_key(key_spec)


def _private_key(key_spec: str) -> Any:
    # moto makes an RSA-2048 key pair for every key, symmetric ones included (~0.1 s of CPU a test),
    # where it is never used (only asymmetric keys sign or have a public key): one pair does for them all
    if key_spec == "SYMMETRIC_DEFAULT":
        return _symmetric_keys_private_key(key_spec)
    return _stock_private_key(key_spec)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """moto with the tables created from template.yaml's own definitions, the bus, the KMS keys and the
    webhook queue."""
    monkeypatch.setattr(kms_models, "generate_private_key", _private_key)
    with mock_aws():
        monkeypatch.setenv("KMS_KEY_ID", create_aws(TABLE, IDEMPOTENCY, "MemoryBus"))
        # webhooks: the secrets' own key, and the delivery queue
        monkeypatch.setenv("WEBHOOK_KMS_KEY_ID", boto3.client("kms").create_key()["KeyMetadata"]["KeyId"])
        monkeypatch.setenv(
            "WEBHOOK_QUEUE_URL", boto3.client("sqs").create_queue(QueueName="webhooks")["QueueUrl"]
        )
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
