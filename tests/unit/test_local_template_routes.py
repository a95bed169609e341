"""The local run reads routes, the authorizer, rules and environment from the template."""

from __future__ import annotations

from pathlib import Path

import pytest

from local.routes import RouteTable
from local.template import RouteDef, parse, resolve_environment

FIXTURE = Path(__file__).parents[1] / "fixtures" / "local_template" / "template.yaml"
REAL = Path(__file__).parents[2] / "template.yaml"


@pytest.fixture(scope="module")
def tpl():
    return parse(FIXTURE)


def test_routes_authorizer_and_rules_come_from_the_template(tpl) -> None:
    keys = {(r.method, r.path): (r.function, r.auth) for r in tpl.routes}
    assert keys[("GET", "/health")] == ("HealthFunction", False)
    assert keys[("GET", "/memory/{id}")] == ("MemoryGetFunction", True)
    assert keys[("ANY", "/echo")] == ("MemoryRecallTextFunction", True)
    assert tpl.authorizer is not None
    assert tpl.authorizer.function == "AuthorizerFunction"
    assert tpl.authorizer.identity_headers == ("Authorization",)
    [rule] = tpl.rules
    assert rule.function == "ConsumerFunction"
    assert rule.bus == "MemoryBus"
    assert rule.pattern == {"source": ["synapse.memory"], "detail-type": ["SessionSummaryDue"]}
    assert rule.retries == 2


def test_handler_paths_follow_code_uri_and_handler(tpl) -> None:
    docs = tpl.functions["DocsFunction"]
    assert docs.file == FIXTURE.parent / "functions" / "docs" / "app.py"
    assert docs.attr == "handler"
    assert tpl.functions["HealthFunction"].file.exists()
    assert tpl.functions["HealthFunction"].timeout == 29


def test_environment_resolves_resources_parameters_and_process_values(tpl) -> None:
    resources = {
        "MemoryTable": "mem-t",
        "IdempotencyTable": "idem-t",
        "MemoryBus": "bus",
        "ProviderKey": "k-1",
    }
    pseudo = {"AWS::StackName": "stack", "AWS::Region": "us-east-1"}
    env = resolve_environment(
        tpl,
        tpl.functions["HealthFunction"].environment,
        resources,
        pseudo,
        process_env={"SUMMARY_EVERY": "3", "MEMORY_TABLE": "ignored", "JWT_SECRET": "s3cret"},
    )
    assert env["MEMORY_TABLE"] == "mem-t"  # resources are never overridden
    assert env["KMS_KEY_ID"] == "k-1"
    assert env["SUMMARY_EVERY"] == "3"  # a parameter: the process environment wins
    assert env["JWT_SECRET"] == "s3cret"
    assert env["LLM_MODEL"] == "gemini-3.1-flash-lite"  # else the parameter's Default
    assert env["LOCAL_EMBEDDER"] == "none"  # plain strings pass through
    assert env["STACK_LABEL"] == "stack-us-east-1"


def test_the_real_template_parses_with_its_authorizer_and_rule() -> None:
    real = parse(REAL)
    assert real.authorizer is not None and real.authorizer.function in real.functions
    assert any(r.path == "/health" and not r.auth for r in real.routes)
    assert {"MemoryTable", "IdempotencyTable"} <= set(real.tables)
    for route in real.routes:
        assert route.function in real.functions


def _table(*routes: tuple[str, str, str]) -> RouteTable:
    return RouteTable([RouteDef(m, p, f, True) for m, p, f in routes])


@pytest.mark.parametrize(
    ("method", "path", "function", "params"),
    [
        ("GET", "/memory/recall", "recall_text", {}),
        ("GET", "/memory/abc", "get", {"id": "abc"}),
        ("GET", "/memory/a%20b", "get", {"id": "a b"}),
        ("POST", "/memory/recall", "recall", {}),
        ("DELETE", "/memory/abc", "delete", {"id": "abc"}),
        ("GET", "/memory/", "list", {}),
        ("GET", "/memory/tags/x/y", "greedy", {"rest": "x/y"}),
        ("PATCH", "/any/thing", "any", {"p": "thing"}),
    ],
)
def test_the_most_specific_route_wins(method: str, path: str, function: str, params: dict[str, str]) -> None:
    # Given routes in an order that would mislead a first-match router
    table = _table(
        ("GET", "/memory/{id}", "get"),
        ("DELETE", "/memory/{id}", "delete"),
        ("GET", "/memory/recall", "recall_text"),
        ("POST", "/memory/recall", "recall"),
        ("GET", "/memory", "list"),
        ("GET", "/memory/tags/{rest+}", "greedy"),
        ("ANY", "/any/{p}", "any"),
    )
    # When / Then
    match = table.match(method, path)
    assert match is not None
    assert (match.route.function, match.path_parameters) == (function, params)


def test_method_mismatch_and_unknown_paths_have_no_route() -> None:
    table = _table(("GET", "/memory/{id}", "get"), ("GET", "/health", "health"))
    assert table.match("POST", "/health") is None
    assert table.match("GET", "/nope") is None
    assert table.match("GET", "/memory/a/b") is None


def test_exact_method_beats_any() -> None:
    table = _table(("ANY", "/x", "any"), ("GET", "/x", "get"))
    assert table.match("GET", "/x").route.function == "get"  # type: ignore[union-attr]
    assert table.match("PUT", "/x").route.function == "any"  # type: ignore[union-attr]


def test_the_real_templates_cors_configuration_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CORS_ALLOW_ORIGINS", raising=False)
    cors = parse(REAL).cors
    assert cors is not None
    assert cors.allow_origins
    assert "authorization" in {h.lower() for h in cors.allow_headers}
