"""Helpers shared by the test suites: the callers, and the in-process harness of local/harness.py."""

from __future__ import annotations

from local.harness import (
    EVENTS,
    ROOT,
    LambdaContext,
    http_event,
    load_function,
    sample_event,
    table_definition,
    template,
)

__all__ = [
    "ALICE",
    "EVENTS",
    "ROOT",
    "LambdaContext",
    "agent",
    "http_event",
    "load_function",
    "sample_event",
    "table_definition",
    "template",
    "user",
]

ALICE = {"userId": "alice", "kind": "user", "scopes": "memory:read memory:write", "keyId": ""}


def agent(
    user_id: str = "alice", scopes: str = "memory:read memory:write", key_id: str = "k1"
) -> dict[str, str]:
    return {"userId": user_id, "kind": "agent", "scopes": scopes, "keyId": key_id}


def user(user_id: str) -> dict[str, str]:
    return {"userId": user_id, "kind": "user", "scopes": "memory:read memory:write", "keyId": ""}
