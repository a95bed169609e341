"""API.md "Input rules (second release)" through the functions, against moto. Each test names the
defect of issue 11 it guards against."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest

from tests.conftest import TABLE, Call
from tests.support import ALICE

MEMORY = {"category": "fact", "key": "uses_docker", "content": "Runs everything in Docker swarm"}
DEEP = "[" * 10_000 + "]" * 10_000
CAFE_NFC = unicodedata.normalize("NFC", "café")
CAFE_NFD = unicodedata.normalize("NFD", "café")

# every route that reads a JSON body: (function, method, path, route key, path parameters)
JSON_ROUTES = [
    ("memory_create", "POST", "/memory", None, None),
    ("memory_update", "PUT", "/memory/6f1c0c2e", "/memory/{id}", {"id": "6f1c0c2e"}),
    ("memory_ingest", "POST", "/memory/ingest", None, None),
    ("memory_recall", "POST", "/memory/recall", None, None),
    ("memory_summarize", "POST", "/memory/summarize", None, None),
    ("keys_create", "POST", "/keys", None, None),
    ("providers_put", "PUT", "/providers/gemini", "/providers/{provider}", {"provider": "gemini"}),
]


def error_of(answer: dict[str, Any], status: int, code: str) -> dict[str, Any]:
    assert answer["statusCode"] == status, answer
    assert answer["headers"]["content-type"] == "application/json; charset=utf-8"
    err: dict[str, Any] = answer["json"]["error"]
    assert err["code"] == code and err["message"].strip(), err
    return err


def create(call: Call, body: dict[str, Any]) -> dict[str, Any]:
    return call("memory_create", "POST", "/memory", body=body, who=ALICE)


def put(call: Call, mem_id: str, body: dict[str, Any]) -> dict[str, Any]:
    return call(
        "memory_update",
        "PUT",
        f"/memory/{mem_id}",
        route="/memory/{id}",
        path_params={"id": mem_id},
        body=body,
        who=ALICE,
    )


def get(call: Call, function: str, path: str, **query: str) -> dict[str, Any]:
    return call(function, "GET", path, query=query, who=ALICE)


# --- defect 1: JSON nested ~10,000 levels was a 500 (RecursionError) -----------------------------


@pytest.mark.parametrize(("function", "method", "path", "route", "params"), JSON_ROUTES)
def test_json_nested_10000_levels_is_400_invalid_json_on_every_json_route(
    call: Call,
    aws: Any,
    function: str,
    method: str,
    path: str,
    route: str | None,
    params: dict[str, str] | None,
) -> None:
    for body in (DEEP, '{"content": ' + "[" * 65 + "]" * 65 + "}"):
        answer = call(function, method, path, route=route, path_params=params, raw_body=body, who=ALICE)
        err = error_of(answer, 400, "invalid_json")
        assert "64 levels" in err["message"]
    assert aws.scan(TableName=TABLE)["Count"] == 0


def test_json_of_64_levels_is_read_as_json(call: Call) -> None:
    # (valid JSON, and deep: the body is then simply the wrong shape)
    body = '{"category": "fact", "key": "deep", "content": ' + "[" * 63 + "]" * 63 + "}"
    error_of(call("memory_create", "POST", "/memory", raw_body=body, who=ALICE), 422, "validation_error")
