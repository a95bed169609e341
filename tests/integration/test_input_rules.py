"""API.md "Input rules (second release)" through the functions, against moto: deep JSON, tags, NUL,
JSON types. Each test names the defect of issue 11 it guards against."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import pytest

from harness.lambdas import ALICE
from tests.conftest import TABLE, Call

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


# --- defect 4 and 6: tags -------------------------------------------------------------------------


def test_unicode_variants_of_a_tag_are_one_tag_on_writes_and_reads(call: Call) -> None:
    # Given memories tagged with three spellings of "docker" and two encodings of "café"
    one = create(call, {**MEMORY, "key": "one", "tags": ["ｄｏｃｋｅｒ", CAFE_NFD]})["json"]
    two = create(call, {**MEMORY, "key": "two", "tags": ["do\u200bcker", CAFE_NFC]})["json"]
    three = create(call, {**MEMORY, "key": "three", "tags": ["DOCKER", "\u200b" + "CAFÉ"]})["json"]
    # Then each is stored as one normal form
    for memory in (one, two, three):
        assert memory["tags"] == ["docker", CAFE_NFC], memory
    ids = {one["id"], two["id"], three["id"]}
    # and every read finds all three with any of the spellings
    for tag in ("docker", "ｄｏｃｋｅｒ", "Do\u200bcker", "\ufeffDOCKER "):
        assert {
            m["id"] for m in get(call, "memory_by_tag", "/memory/by-tag", tag=tag)["json"]["memories"]
        } == ids
        assert {m["id"] for m in get(call, "memory_list", "/memory", tag=tag)["json"]["memories"]} == ids
        found = get(call, "memory_search", "/memory/search", q="swarm", tag=tag)["json"]["memories"]
        assert {m["id"] for m in found} == ids
    for tag in (CAFE_NFD, CAFE_NFC, "CAFÉ"):
        assert {
            m["id"] for m in get(call, "memory_by_tag", "/memory/by-tag", tag=tag)["json"]["memories"]
        } == ids
        text = get(call, "memory_recall_text", "/memory/recall", tag=tag)["body"]
        assert "Memories: 3 total" in text
    recalled = call(
        "memory_recall",
        "POST",
        "/memory/recall",
        body={"query": "docker swarm", "tags": ["Ｄｏｃｋｅｒ"]},
        who=ALICE,
    )
    assert {m["id"] for m in recalled["json"]["memories"]} == ids
    # and PUT normalises too
    assert put(call, one["id"], {"tags": ["K8S", "ｋ８ｓ", "k\u200b8s"]})["json"]["tags"] == ["k8s"]


@pytest.mark.parametrize("blank", ["", "   ", "\u200b", "\u0000", "\ufeff\u200d"])
def test_an_empty_tag_is_422_on_writes_as_on_reads(call: Call, aws: Any, blank: str) -> None:
    # (a write silently dropped `""` while a read refused it)
    err = error_of(create(call, {**MEMORY, "tags": ["fine", blank]}), 422, "validation_error")
    assert err["details"][0]["loc"] == ["body", "tags", 1]
    recall = call("memory_recall", "POST", "/memory/recall", body={"query": "x", "tags": [blank]}, who=ALICE)
    assert error_of(recall, 422, "validation_error")["details"][0]["loc"][:2] == ["body", "tags"]
    assert aws.scan(TableName=TABLE)["Count"] == 0
    memory = create(call, MEMORY)["json"]
    error_of(put(call, memory["id"], {"tags": [blank]}), 422, "validation_error")
    for function, path, extra in (
        ("memory_by_tag", "/memory/by-tag", {}),
        ("memory_list", "/memory", {}),
        ("memory_search", "/memory/search", {"q": "docker"}),
        ("memory_recall_text", "/memory/recall", {}),
    ):
        err = error_of(get(call, function, path, tag=blank, **extra), 422, "validation_error")
        assert err["details"][0]["loc"] == ["query", "tag"], (path, err)


def test_a_tag_of_50_characters_once_normalised_is_fine_on_writes_and_reads(call: Call) -> None:
    tag = "\u200b".join("x" * 50)  # 99 characters as sent, 50 stored
    memory = create(call, {**MEMORY, "tags": [tag]})["json"]
    assert memory["tags"] == ["x" * 50]
    assert [m["id"] for m in get(call, "memory_by_tag", "/memory/by-tag", tag=tag)["json"]["memories"]] == [
        memory["id"]
    ]
    error_of(get(call, "memory_by_tag", "/memory/by-tag", tag="x" * 51), 422, "validation_error")


def test_a_lone_surrogate_in_a_tag_is_422_not_a_500(call: Call, aws: Any) -> None:
    body = '{"category": "fact", "key": "k", "content": "x", "tags": ["\\ud800docker"]}'
    error_of(call("memory_create", "POST", "/memory", raw_body=body, who=ALICE), 422, "validation_error")
    assert aws.scan(TableName=TABLE)["Count"] == 0


# --- defect 4: NUL in content and queries ---------------------------------------------------------

NUL = "before\u0000after"


def test_nul_in_content_and_queries_is_422(call: Call, aws: Any) -> None:
    messages = [{"role": "user", "content": NUL}]
    cases = [
        (create(call, {**MEMORY, "content": NUL}), ["body", "content"]),
        (
            call(
                "memory_ingest",
                "POST",
                "/memory/ingest",
                body={"sessionId": "s1", "messages": messages},
                who=ALICE,
            ),
            ["body", "messages", 0, "content"],
        ),
        (
            call(
                "memory_summarize",
                "POST",
                "/memory/summarize",
                body={"sessionId": "s1", "messages": messages},
                who=ALICE,
            ),
            ["body", "messages", 0, "content"],
        ),
        (call("memory_recall", "POST", "/memory/recall", body={"query": NUL}, who=ALICE), ["body", "query"]),
        (get(call, "memory_search", "/memory/search", q=NUL), ["query", "q"]),
    ]
    for answer, loc in cases:
        err = error_of(answer, 422, "validation_error")
        assert err["details"][0]["loc"] == loc, err
        assert "NUL" in err["message"]
    assert aws.scan(TableName=TABLE)["Count"] == 0
    memory = create(call, MEMORY)["json"]
    error_of(put(call, memory["id"], {"content": NUL}), 422, "validation_error")
    assert get(call, "memory_get", f"/memory/{memory['id']}")["statusCode"] in (200, 404)


# --- defect 5: loose JSON types -------------------------------------------------------------------


@pytest.mark.parametrize("confidence", ["0.5", True, "1"])
def test_a_confidence_that_is_not_a_json_number_is_422(call: Call, aws: Any, confidence: Any) -> None:
    # (it was stored: "0.5" as 0.5, true as 1.0)
    err = error_of(create(call, {**MEMORY, "confidence": confidence}), 422, "validation_error")
    assert err["details"][0]["loc"] == ["body", "confidence"]
    assert aws.scan(TableName=TABLE)["Count"] == 0


def test_nan_is_not_json_and_1e999_is_not_a_confidence(call: Call, aws: Any) -> None:
    nan = '{"category": "fact", "key": "k", "content": "x", "confidence": NaN}'
    err = error_of(call("memory_create", "POST", "/memory", raw_body=nan, who=ALICE), 400, "invalid_json")
    assert "NaN" in err["message"]
    huge = '{"category": "fact", "key": "k", "content": "x", "confidence": 1e999}'
    err = error_of(
        call("memory_create", "POST", "/memory", raw_body=huge, who=ALICE), 422, "validation_error"
    )
    assert err["message"] == "Invalid confidence: must be a finite number between 0 and 1."
    assert aws.scan(TableName=TABLE)["Count"] == 0


def test_a_limit_in_a_body_is_a_number_and_in_a_query_string_text(call: Call) -> None:
    for limit in ("5", True):
        answer = call(
            "memory_recall", "POST", "/memory/recall", body={"query": "x", "limit": limit}, who=ALICE
        )
        assert error_of(answer, 422, "validation_error")["details"][0]["loc"] == ["body", "limit"]
    assert (
        call("memory_recall", "POST", "/memory/recall", body={"query": "x", "limit": 5}, who=ALICE)[
            "statusCode"
        ]
        == 200
    )
    # query-string values are text and are parsed, as before
    assert get(call, "memory_list", "/memory", limit="5")["statusCode"] == 200


def test_a_timestamp_in_a_body_is_a_string(call: Call) -> None:
    err = error_of(create(call, {**MEMORY, "expires_at": 1767225600}), 422, "validation_error")
    assert err["details"][0]["loc"] == ["body", "expires_at"]


# --- constraints the document states are the ones enforced ----------------------------------------


def test_path_constraints_are_422(call: Call) -> None:
    bad_provider = call(
        "providers_delete",
        "DELETE",
        "/providers/openai",
        route="/providers/{provider}",
        path_params={"provider": "openai"},
        who=ALICE,
    )
    assert error_of(bad_provider, 422, "validation_error")["details"][0]["loc"] == ["path", "provider"]
    bad_user = call(
        "memory_identity",
        "GET",
        "/memory/identity/a:b",
        route="/memory/identity/{userId}",
        path_params={"userId": "a:b"},
        who=ALICE,
    )
    assert error_of(bad_user, 422, "validation_error")["details"][0]["loc"] == ["path", "userId"]
    bad_window = get(call, "memory_expiring", "/memory/expiring", within="7w")
    assert error_of(bad_window, 422, "validation_error")["details"][0]["loc"] == ["query", "within"]


def test_a_percent_encoded_path_parameter_is_decoded_before_its_pattern_is_checked(call: Call) -> None:
    # Powertools matches routes on the raw path: `alice%40example.com` arrived encoded, so the
    # caller's own identity was refused (403, and 422 once the pattern is checked)
    me = {**ALICE, "userId": "alice@example.com"}
    answer = call(
        "memory_identity",
        "GET",
        "/memory/identity/alice%40example.com",
        route="/memory/identity/{userId}",
        path_params={"userId": "alice@example.com"},
        who=me,
    )
    assert answer["statusCode"] == 200, answer
    assert answer["json"]["userId"] == "alice@example.com"
    summaries = call(
        "memory_summaries",
        "GET",
        "/memory/summaries/s%2E1",
        route="/memory/summaries/{sessionId}",
        path_params={"sessionId": "s.1"},
        who=me,
    )
    assert summaries["statusCode"] == 200, summaries


# --- the House issue's defects: bodies that are JSON, but not what a route reads ------------------

# every route that reads a JSON body, besides those above
OBJECT_ROUTES = [
    *JSON_ROUTES,
    ("memory_context", "POST", "/memory/context", None, None),
    ("memory_restore", "POST", "/memory/6f1c0c2e/restore", "/memory/{id}/restore", {"id": "6f1c0c2e"}),
    ("minds_create", "POST", "/minds", None, None),
    ("mcp", "POST", "/mcp", None, None),
]


@pytest.mark.parametrize(("function", "method", "path", "route", "params"), OBJECT_ROUTES)
def test_a_body_that_is_not_a_json_object_is_422_on_every_json_route(
    call: Call,
    aws: Any,
    function: str,
    method: str,
    path: str,
    route: str | None,
    params: dict[str, str] | None,
) -> None:
    # Given bodies that are JSON but no object: an array of what the route takes, and plain values
    # (an array was read by its first element, the rest dropped without a word)
    two = json.dumps([{**MEMORY, "key": "first"}, {**MEMORY, "key": "second"}])
    for body, kind in ((two, "an array"), ('"x"', "a string"), ("5", "a number"), ("null", "null")):
        # When one is sent
        answer = call(function, method, path, route=route, path_params=params, raw_body=body, who=ALICE)
        # Then it is 422, saying so, and nothing is stored
        err = error_of(answer, 422, "validation_error")
        assert err["details"] == [{"loc": ["body"], "msg": f"must be a JSON object, not {kind}"}]
        assert err["message"] == f"Invalid request: must be a JSON object, not {kind}."
    assert aws.scan(TableName=TABLE)["Count"] == 0


def test_restore_takes_a_version_as_every_integer_field_does(call: Call) -> None:
    # Given a memory at version 2
    mem_id = create(call, MEMORY)["json"]["id"]
    put(call, mem_id, {"content": "Runs everything in Kubernetes"})

    def restore(version: str) -> dict[str, Any]:
        return call(
            "memory_restore",
            "POST",
            f"/memory/{mem_id}/restore",
            route="/memory/{id}/restore",
            path_params={"id": mem_id},
            raw_body='{"version": ' + version + "}",
            who=ALICE,
        )

    # When version 1 is asked for as 1.0 (a JSON number with an integer value, as `limit` takes it)
    answer = restore("1.0")
    # Then version 1 is restored
    assert answer["statusCode"] == 200, answer["body"]
    assert answer["json"]["content"] == MEMORY["content"] and answer["json"]["version"] == 3
    # And what is no integer is still refused
    for version in ("1.5", '"1"', "true"):
        assert error_of(restore(version), 422, "validation_error")["details"][0]["loc"] == ["body", "version"]


def test_an_integer_of_5000_digits_is_json_that_a_bounded_field_refuses(call: Call, aws: Any) -> None:
    # Given integers too long for Python to read as an int (past 4,300 digits; it was 400 invalid_json)
    huge = "9" * 5000
    memory = json.dumps(MEMORY)[:-1]
    # When they are sent where a field has bounds
    answers = {
        "confidence": create_raw(call, memory + ', "confidence": ' + huge + "}"),
        "limit": call(
            "memory_recall",
            "POST",
            "/memory/recall",
            raw_body='{"query": "x", "limit": -' + huge + "}",
            who=ALICE,
        ),
    }
    # Then each is 422 for that field, like 1e999 (read as a float: no quadratic int conversion)
    for field, answer in answers.items():
        assert error_of(answer, 422, "validation_error")["details"][0]["loc"] == ["body", field]
    assert aws.scan(TableName=TABLE)["Count"] == 0
    # And in a field the route ignores it is simply JSON
    assert create_raw(call, memory + ', "whatever": ' + huge + "}")["statusCode"] == 201


def create_raw(call: Call, body: str) -> dict[str, Any]:
    return call("memory_create", "POST", "/memory", raw_body=body, who=ALICE)
