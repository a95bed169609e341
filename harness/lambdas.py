"""Handlers in-process, for tests and benchmarks alike: a Lambda context, API Gateway (payload 2.0)
events built from the samples in events/ and the callers the authorizer would name, a fresh instance
of a function's module (a new container), and moto's tables from template.yaml's own resources."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
import uuid
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from local.template import load_yaml

ROOT = Path(__file__).resolve().parent.parent
EVENTS = ROOT / "events"

# the authorizer's context for a caller (`who=` of `http_event`)
ALICE = {"userId": "alice", "kind": "user", "scopes": "memory:read memory:write", "keyId": ""}


def agent(
    user_id: str = "alice", scopes: str = "memory:read memory:write", key_id: str = "k1"
) -> dict[str, str]:
    return {"userId": user_id, "kind": "agent", "scopes": scopes, "keyId": key_id}


def user(user_id: str) -> dict[str, str]:
    return {"userId": user_id, "kind": "user", "scopes": "memory:read memory:write", "keyId": ""}


@cache
def template() -> dict[str, Any]:
    return load_yaml(ROOT / "template.yaml")


def table_definition(logical_id: str) -> dict[str, Any]:
    """create_table arguments from the template's own definition of a table."""
    props = template()["Resources"][logical_id]["Properties"]
    definition = {
        "AttributeDefinitions": props["AttributeDefinitions"],
        "KeySchema": props["KeySchema"],
        "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
    }
    if "GlobalSecondaryIndexes" in props:
        definition["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
    return definition


SNAPSHOT_BUCKET = "synapse-snapshots-test"


def create_aws(table: str, idempotency: str, bus: str, bucket: str = SNAPSHOT_BUCKET) -> str:
    """Inside `mock_aws`: the two tables as template.yaml defines them, the event bus, a KMS key (its
    id returned: KMS_KEY_ID) and the snapshot bucket (SNAPSHOT_BUCKET), as the local run makes it."""
    import boto3

    from local.aws import create_bucket

    ddb = boto3.client("dynamodb")
    ddb.create_table(TableName=table, **table_definition("MemoryTable"))
    ddb.create_table(TableName=idempotency, **table_definition("IdempotencyTable"))
    boto3.client("events").create_event_bus(Name=bus)
    key_id: str = boto3.client("kms").create_key()["KeyMetadata"]["KeyId"]
    create_bucket(boto3.client("s3"), bucket, boto3.client("kms").create_key()["KeyMetadata"]["KeyId"])
    return key_id


class LambdaContext:
    function_name = "test-function"
    function_version = "$LATEST"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:test-function"
    log_group_name = "/aws/lambda/test-function"
    log_stream_name = "test"

    def __init__(self) -> None:
        self.aws_request_id = str(uuid.uuid4())

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def load_function(name: str) -> ModuleType:
    """A fresh instance of functions/<name>/app.py (like a new Lambda container)."""
    path = ROOT / "functions" / name / "app.py"
    module_name = f"fn_{name}_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def sample_event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / f"{name}.json").read_text())


def http_event(
    method: str,
    path: str,
    *,
    body: Any = None,
    raw_body: str | None = None,
    query: dict[str, str] | None = None,
    who: dict[str, str] | None = None,
    route: str | None = None,
    path_params: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    base: str = "memory_create",
) -> dict[str, Any]:
    """An API Gateway HTTP API (payload 2.0) event, built from a sample in events/."""
    event = copy.deepcopy(sample_event(base))
    event["routeKey"] = f"{method} {route or path}"
    event["rawPath"] = path
    event["rawQueryString"] = "&".join(f"{k}={v}" for k, v in (query or {}).items())
    event["queryStringParameters"] = query
    event["pathParameters"] = path_params
    event["headers"] = {"content-type": "application/json", **(headers or {})}
    event["requestContext"]["http"]["method"] = method
    event["requestContext"]["http"]["path"] = path
    event["requestContext"]["routeKey"] = event["routeKey"]
    event["requestContext"]["authorizer"] = {"lambda": who} if who is not None else {}
    if raw_body is not None:
        event["body"] = raw_body
    else:
        event["body"] = json.dumps(body) if body is not None else None
    event["isBase64Encoded"] = False
    return event
