"""GET /openapi.json: every status each operation can answer, in the contract's envelope; 204s
without a body; the constraints the server enforces. A client generated from it must be right."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema_rs
import pytest
import schemathesis

from harness.lambdas import load_function
from synapse.core.errors import NotFound, UpstreamUnavailable, ValidationFailed
from synapse.core.models.base import KEY_PATTERN, SESSION_ID_PATTERN, USER_ID_RE, WITHIN_PATTERN
from synapse.http import openapi
from synapse.http.envelope import error_response, to_json

ENVELOPE = "#/components/schemas/ErrorEnvelope"
AUTH = {"401", "403", "429", "500", "503"}
BODY = {"400", "413", "422"}
MIND = {"404"}  # X-Mind-Id naming a mind the user does not have
# what each operation can answer, as API.md and the code say (status codes as strings, as in JSON)
EXPECTED: dict[str, set[str]] = {
    "GET /health": {"200", "429", "500"},
    "GET /openapi.json": {"200", "429", "500"},
    "GET /docs": {"200", "429", "500"},
    "POST /memory": {"200", "201", "202", "409"} | MIND | AUTH | BODY,
    "POST /memory/batch": {"200"} | MIND | AUTH | BODY,
    "POST /memory/import": {"200"} | MIND | AUTH | BODY,
    "GET /memory": {"200", "422"} | MIND | AUTH,
    "GET /memory/{id}": {"200", "404", "422"} | AUTH,
    "PUT /memory/{id}": {"200", "202", "404"} | AUTH | BODY,
    "DELETE /memory/{id}": {"202", "204", "404"} | AUTH,
    "POST /memory/{id}/verify": {"200", "404"} | AUTH,
    "GET /memory/{id}/history": {"200", "404"} | AUTH,
    "GET /memory/changes": {"200", "410", "422"} | MIND | AUTH,
    "GET /memory/timeline": {"200", "422"} | MIND | AUTH,
    "POST /memory/{id}/restore": {"200", "202", "404"} | AUTH | BODY,
    "GET /memory/proposals": {"200", "422"} | MIND | AUTH,
    "POST /memory/proposals/{proposalId}/accept": {"200", "204", "404", "409"} | AUTH | BODY,
    "POST /memory/proposals/{proposalId}/decline": {"204", "404"} | AUTH,
    "POST /minds": {"201", "409"} | AUTH | BODY,
    "GET /minds": {"200"} | AUTH,
    "DELETE /minds/{mindId}": {"204", "404", "409"} | AUTH,
    "PATCH /minds/{mindId}": {"200", "404", "409"} | AUTH | BODY,
    "POST /minds/{mindId}/consolidate": {"200", "404"} | AUTH,
    "GET /memory/recall": {"200", "422"} | MIND | AUTH,
    "GET /memory/by-tag": {"200", "422"} | MIND | AUTH,
    "GET /memory/search": {"200", "422"} | MIND | AUTH,
    "GET /memory/expiring": {"200", "422"} | MIND | AUTH,
    "POST /memory/ingest": {"200", "409"} | MIND | AUTH | BODY,
    "POST /memory/recall": {"200"} | MIND | AUTH | BODY,
    "POST /memory/context": {"200"} | MIND | AUTH | BODY,
    "POST /mcp": {"200", "202"} | MIND | AUTH | BODY,
    "POST /memory/summarize": {"200", "404"} | AUTH | BODY,
    "GET /memory/identity/{userId}": {"200", "422"} | MIND | AUTH,
    "GET /memory/summaries/{sessionId}": {"200", "422"} | MIND | AUTH,
    "POST /keys": {"201", "404", "409"} | AUTH | BODY,
    "GET /keys": {"200"} | AUTH,
    "DELETE /keys/{keyId}": {"204", "404"} | AUTH,
    "PUT /providers/{provider}": {"200"} | AUTH | BODY,
    "GET /providers": {"200"} | AUTH,
    "DELETE /providers/{provider}": {"204", "404", "422"} | AUTH,
    "GET /me/export": {"200", "413"} | AUTH,
    "POST /me/exports": {"202"} | AUTH,
    "GET /me/exports/{exportId}": {"200", "404"} | AUTH,
    "DELETE /me": {"200"} | AUTH,
    "POST /webhooks": {"201", "404", "409"} | AUTH | BODY,
    "GET /webhooks": {"200"} | AUTH,
    "DELETE /webhooks/{webhookId}": {"204", "404"} | AUTH,
    "POST /webhooks/{webhookId}/test": {"202", "404"} | AUTH,
    "GET /webhooks/{webhookId}/deliveries": {"200", "404", "422"} | AUTH,
}
PUBLIC = {"GET /health", "GET /openapi.json", "GET /docs"}


@cache
def document() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(to_json(load_function("docs").openapi()))
    return doc


def operations() -> dict[str, dict[str, Any]]:
    return {f"{m.upper()} {p}": op for p, item in document()["paths"].items() for m, op in item.items()}


def parameter(label: str, name: str) -> dict[str, Any]:
    found = [p for p in operations()[label].get("parameters", []) if p["name"] == name]
    assert len(found) == 1, (label, name)
    return found[0]


def plain(schema: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of an optional parameter's schema."""
    branches = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    assert len(branches) == 1, schema
    return branches[0]


def component(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = document()["components"]["schemas"][name]
    return schema


def test_every_operation_documents_each_status_it_can_answer() -> None:
    assert {label: set(op["responses"]) for label, op in operations().items()} == EXPECTED


def test_every_error_is_the_envelope_and_nothing_is_powertools_own_422() -> None:
    text = json.dumps(document())
    assert "HTTPValidationError" not in text and 'ValidationError"' not in text
    for label, op in operations().items():
        for status, answer in op["responses"].items():
            if int(status) >= 400:
                assert answer["content"] == {"application/json": {"schema": {"$ref": ENVELOPE}}}, (
                    label,
                    status,
                )
                assert answer["description"].split(":")[0] in {
                    "invalid_json",
                    "unauthorized",
                    "forbidden",
                    "not_found",
                    "conflict",
                    "quota_exceeded",
                    "gone",
                    "payload_too_large",
                    "validation_error",
                    "rate_limited",
                    "internal_error",
                    "upstream_unavailable",
                }, (label, status, answer["description"])


def test_503_declares_retry_after() -> None:
    for label, op in operations().items():
        if "503" in op["responses"]:
            header = op["responses"]["503"]["headers"]["Retry-After"]
            assert header["required"] is True and header["schema"]["type"] == "integer", label


def test_the_envelope_schema_is_the_contracts() -> None:
    envelope = component("ErrorEnvelope")
    assert envelope["required"] == ["error"] and envelope["additionalProperties"] is False
    info = component("ErrorInfo")
    assert set(info["properties"]) == {"code", "message", "details"}
    assert sorted(info["required"]) == ["code", "message"] and info["additionalProperties"] is False
    assert info["properties"]["details"]["type"] == "array"  # omitted when empty, never null
    detail = component("ErrorDetail")
    assert sorted(detail["required"]) == ["loc", "msg"]
    # and what the service answers validates against it
    validator = jsonschema_rs.validator_for({"$ref": ENVELOPE, "components": document()["components"]})
    for err in (
        ValidationFailed.at(["body", "tags", 0], "must not be empty"),
        NotFound("No memory with that id."),
        UpstreamUnavailable("Gemini is down."),
    ):
        body = json.loads(error_response(err).body)
        assert validator.is_valid(body), body
    assert not validator.is_valid({"detail": [{"loc": ["body"], "msg": "x", "type": "missing"}]})
    assert not validator.is_valid({"error": {"code": "x", "message": "y", "details": None}})


def test_204_answers_have_no_body_and_no_content_type() -> None:
    for label in ("DELETE /memory/{id}", "DELETE /keys/{keyId}", "DELETE /providers/{provider}"):
        assert operations()[label]["responses"]["204"] == {
            "description": operations()[label]["responses"]["204"]["description"]
        }


def test_2xx_answers_keep_their_schemas() -> None:
    ops = operations()
    memory = {"$ref": "#/components/schemas/Memory"}
    assert ops["POST /memory"]["responses"]["201"]["content"]["application/json"]["schema"] == memory
    assert ops["POST /memory"]["responses"]["200"]["content"]["application/json"]["schema"] == memory
    assert ops["POST /keys"]["responses"]["201"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ApiKeyCreated"
    }
    assert set(ops["GET /memory/recall"]["responses"]["200"]["content"]) == {"text/plain"}


def test_security_is_bearer_except_on_public_routes() -> None:
    doc = document()
    assert doc["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "A user's JWT, or an agent's API key (gts_live_…)",
    }
    assert doc["security"] == [{"bearer": []}]
    for label, op in operations().items():
        if label in PUBLIC:
            assert op["security"] == [], label
        else:
            assert "security" not in op, label  # the document's default: bearer


def test_the_constraints_the_server_enforces_are_in_the_schemas() -> None:
    provider = parameter("PUT /providers/{provider}", "provider")["schema"]
    assert component(provider["$ref"].rsplit("/", 1)[1])["enum"] == ["gemini"]
    assert parameter("DELETE /providers/{provider}", "provider")["schema"] == provider
    assert (
        parameter("GET /memory/summaries/{sessionId}", "sessionId")["schema"]["pattern"] == SESSION_ID_PATTERN
    )
    assert parameter("GET /memory/identity/{userId}", "userId")["schema"]["pattern"] == USER_ID_RE.pattern
    assert plain(parameter("GET /memory/expiring", "within")["schema"])["pattern"] == WITHIN_PATTERN
    for label in ("GET /memory", "GET /memory/by-tag", "GET /memory/search", "GET /memory/recall"):
        tag = plain(parameter(label, "tag")["schema"])
        assert (tag["minLength"], tag["maxLength"]) == (1, 50), label
    q = parameter("GET /memory/search", "q")["schema"]
    assert (q["minLength"], q["maxLength"], q["pattern"]) == (1, 2000, "^[^\\x00]*$")
    for label, low, high in (
        ("GET /memory", 1, 100),
        ("GET /memory/recall", 1, 500),
        ("GET /memory/search", 1, 100),
        ("GET /memory/by-tag", 1, 100),
        ("GET /memory/timeline", 1, 100),
    ):
        limit = plain(parameter(label, "limit")["schema"])
        assert (limit["minimum"], limit["maximum"]) == (low, high), label

    memory_in = component("MemoryIn")["properties"]
    assert memory_in["key"]["pattern"] == KEY_PATTERN
    assert (memory_in["content"]["minLength"], memory_in["content"]["maxLength"]) == (1, 8000)
    assert memory_in["content"]["pattern"] == "^[^\\x00]*$"
    assert memory_in["tags"]["maxItems"] == 20
    assert (memory_in["tags"]["items"]["minLength"], memory_in["tags"]["items"]["maxLength"]) == (1, 50)
    assert plain(memory_in["confidence"]) == {"type": "number", "minimum": 0.0, "maximum": 1.0}
    recall_in = component("RecallIn")["properties"]
    assert (recall_in["limit"]["minimum"], recall_in["limit"]["maximum"], recall_in["limit"]["type"]) == (
        1,
        50,
        "integer",
    )
    assert plain(recall_in["tags"])["items"]["minLength"] == 1
    ingest_in = component("IngestIn")["properties"]
    assert ingest_in["sessionId"]["pattern"] == SESSION_ID_PATTERN
    assert (ingest_in["messages"]["minItems"], ingest_in["messages"]["maxItems"]) == (1, 50)
    assert component("ChatMessage")["properties"]["content"]["pattern"] == "^[^\\x00]*$"
    assert component("ProviderIn")["properties"]["api_key"]["pattern"] == "^[\\x21-\\x7e]+$"


def test_schemathesis_reads_every_operation() -> None:
    schema = schemathesis.openapi.from_dict(document())
    labels = []
    for result in schema.get_all_operations():
        operation = result.ok()
        labels.append(f"{operation.method.upper()} {operation.path}")
    assert set(labels) == set(EXPECTED)


@pytest.mark.parametrize("access", ["any", "read", "write", "user"])
def test_the_helper_answers_the_same_table_for_every_route_of_a_kind(access: openapi.Access) -> None:
    answers = openapi.responses(access, {201: "Created"}, body=True, not_found="no such thing")
    assert set(answers) == {201, 400, 401, 403, 404, 413, 422, 429, 500, 503}
    assert openapi.responses("public", params=False).keys() == {200, 429, 500}


def test_every_memory_conversation_and_mcp_operation_takes_x_mind_id_and_no_other_does() -> None:
    for label, op in operations().items():
        named = [p["name"] for p in op.get("parameters", []) if p["in"] == "header"]
        path = label.split(" ", 1)[1]
        assert ("X-Mind-Id" in named) == (path.startswith("/memory") or path == "/mcp"), label


def test_the_console_is_not_an_operation() -> None:
    # GET /console and its files are a page for people (text/html, JS, CSS), not an operation for API
    # clients: a client generated from the document gets no method for them, and schemathesis does not
    # fuzz them (tests/integration/test_console.py and the browser tests cover them)
    assert not [path for path in document()["paths"] if path.startswith("/console")]
