"""template.yaml: routes ↔ code, the authorizer, least privilege, the table, the sample events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import decode_str

ROOT = Path(__file__).resolve().parents[2]

# The contract (API.md): function dir -> (method, path) routes. Non-HTTP functions have none.
ROUTES: dict[str, set[tuple[str, str]]] = {
    "health": {("GET", "/health")},
    "docs": {("GET", "/openapi.json"), ("GET", "/docs")},
    "console": {("GET", "/console"), ("GET", "/console/{asset}")},
    "memory_create": {("POST", "/memory")},
    "memory_batch": {("POST", "/memory/batch")},
    "memory_import": {("POST", "/memory/import")},
    "memory_list": {("GET", "/memory")},
    "memory_get": {("GET", "/memory/{id}")},
    "memory_update": {("PUT", "/memory/{id}")},
    "memory_delete": {("DELETE", "/memory/{id}")},
    "memory_verify": {("POST", "/memory/{id}/verify")},
    "memory_proposals": {("GET", "/memory/proposals")},
    "proposal_accept": {("POST", "/memory/proposals/{proposalId}/accept")},
    "proposal_decline": {("POST", "/memory/proposals/{proposalId}/decline")},
    "memory_history": {("GET", "/memory/{id}/history")},
    "memory_changes": {("GET", "/memory/changes")},
    "memory_timeline": {("GET", "/memory/timeline")},
    "minds_create": {("POST", "/minds")},
    "minds_list": {("GET", "/minds")},
    "minds_delete": {("DELETE", "/minds/{mindId}")},
    "minds_update": {("PATCH", "/minds/{mindId}")},
    "memory_restore": {("POST", "/memory/{id}/restore")},
    "memory_recall_text": {("GET", "/memory/recall")},
    "memory_by_tag": {("GET", "/memory/by-tag")},
    "memory_search": {("GET", "/memory/search")},
    "memory_expiring": {("GET", "/memory/expiring")},
    "keys_create": {("POST", "/keys")},
    "keys_list": {("GET", "/keys")},
    "keys_delete": {("DELETE", "/keys/{keyId}")},
    "memory_ingest": {("POST", "/memory/ingest")},
    "memory_recall": {("POST", "/memory/recall")},
    "memory_context": {("POST", "/memory/context")},
    "mcp": {("POST", "/mcp")},
    "memory_summarize": {("POST", "/memory/summarize")},
    "memory_identity": {("GET", "/memory/identity/{userId}")},
    "memory_summaries": {("GET", "/memory/summaries/{sessionId}")},
    "providers_put": {("PUT", "/providers/{provider}")},
    "providers_list": {("GET", "/providers")},
    "providers_delete": {("DELETE", "/providers/{provider}")},
    "me_export": {("GET", "/me/export")},
    "me_delete": {("DELETE", "/me")},
    "me_exports_create": {("POST", "/me/exports")},
    "me_exports_get": {("GET", "/me/exports/{exportId}")},
    "export_writer": set(),
    "authorizer": set(),
    "summarize_session": set(),
    "snapshot_writer": set(),
    "change_events": set(),
    "minds_consolidate": {("POST", "/minds/{mindId}/consolidate")},
    "consolidate_daily": set(),
    "webhooks_create": {("POST", "/webhooks")},
    "webhooks_list": {("GET", "/webhooks")},
    "webhooks_delete": {("DELETE", "/webhooks/{webhookId}")},
    "webhooks_test": {("POST", "/webhooks/{webhookId}/test")},
    "webhooks_deliveries": {("GET", "/webhooks/{webhookId}/deliveries")},
    "webhook_delivery": set(),
}
PUBLIC_ROUTES = {
    ("GET", "/health"),
    ("GET", "/openapi.json"),
    ("GET", "/docs"),
    # the console's page and files: they hold no data (the browser signs in and calls the API)
    ("GET", "/console"),
    ("GET", "/console/{asset}"),
}

# Functions that must never write: only these policy templates are allowed on them.
READ_ONLY = {
    "memory_proposals",
    "memory_context",
    "memory_history",
    "memory_changes",
    "memory_timeline",
    "webhooks_list",
    "webhooks_deliveries",
    "memory_list",
    "memory_get",
    "memory_recall_text",
    "memory_by_tag",
    "memory_search",
    "memory_expiring",
    "keys_list",
    "memory_identity",
    "memory_summaries",
    "providers_list",
    "me_export",
    "authorizer",
    "memory_recall",
    "health",
    "docs",
    "console",
}
READ_POLICIES = {"DynamoDBReadPolicy", "KMSDecryptPolicy"}
# the readers of minds' corpora (search/cache.py): they may read snapshots and ask for new ones
SNAPSHOT_READERS = {"memory_recall", "memory_context", "mcp", "memory_ingest"}
# the deletions of minds and users: they delete the snapshots too
SNAPSHOT_DELETERS = {"minds_delete", "me_delete"}
# the functions of export files: their bucket statements are checked on their own
EXPORT_FILES = {"me_exports_get", "export_writer"}
EXPORT_OBJECTS = {"Fn::Sub": "${SnapshotBucket.Arn}/exports/*"}
KMS_DECRYPTERS = {
    "proposal_accept",
    "minds_consolidate",
    "consolidate_daily",
    "memory_create",
    "memory_batch",
    "memory_import",
    "memory_update",
    "memory_restore",
    "memory_ingest",
    "memory_recall",
    "memory_context",
    "mcp",
    "memory_summarize",
    "summarize_session",
    "webhook_delivery",  # the webhook secrets' own key (below)
}


NO_VALUE = {"Ref": "AWS::NoValue"}


def _when(value: Any, *, snapstart: bool) -> Any:
    """A value as deployed with SnapStart=on or off: `Fn::If [SnapStartOn, a, b]` resolved (what
    AWS::LanguageExtensions does before the SAM transform), anything else as it is."""
    if isinstance(value, dict) and set(value) == {"Fn::If"}:
        condition, when_on, when_off = value["Fn::If"]
        assert condition == "SnapStartOn"
        return _when(when_on if snapstart else when_off, snapstart=snapstart)
    return value


def _camel(dirname: str) -> str:
    return "".join(part.capitalize() for part in dirname.split("_")) + "Function"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    parsed, matches = decode_str((ROOT / "template.yaml").read_text(encoding="utf-8"))
    assert not matches, [str(m) for m in matches]
    assert parsed is not None
    return parsed


@pytest.fixture(scope="module")
def functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: res
        for name, res in template["Resources"].items()
        if res.get("Type") == "AWS::Serverless::Function"
    }


def _code_file(props: dict[str, Any]) -> Path:
    """The handler's source file: CodeUri + Handler's module path."""
    module = props["Handler"].rsplit(".", 1)[0]
    return ROOT / props["CodeUri"] / f"{module}.py"


def _http_routes(props: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (ev["Properties"]["Method"].upper(), ev["Properties"]["Path"])
        for ev in (props.get("Events") or {}).values()
        if ev.get("Type") == "HttpApi"
    }


def _policy_names(props: dict[str, Any]) -> set[str]:
    """The policy templates of a function, and the managed policies of the template it names."""
    names: set[str] = set()
    for policy in props.get("Policies") or []:
        if isinstance(policy, dict) and set(policy) == {"Ref"}:
            names.add(policy["Ref"])
        else:
            names.update(policy.keys() if isinstance(policy, dict) else {str(policy)})
    return names


def test_every_function_follows_the_naming_convention(functions: dict[str, dict[str, Any]]) -> None:
    # Given the contract's function dirs
    expected = {_camel(d) for d in ROUTES}
    # When the template's functions are listed
    actual = set(functions)
    # Then they are exactly <CamelName>Function, one per dir, with the conventional CodeUri/Handler
    assert actual == expected, f"missing {sorted(expected - actual)}, unexpected {sorted(actual - expected)}"
    for dirname in ROUTES:
        props = functions[_camel(dirname)]["Properties"]
        if dirname == "docs":
            assert (props["CodeUri"], props["Handler"]) == ("functions/", "docs/app.handler")
        else:
            assert (props["CodeUri"], props["Handler"]) == (f"functions/{dirname}/", "app.handler")


def test_routes_match_the_contract(functions: dict[str, dict[str, Any]]) -> None:
    # Given every function's HttpApi events
    # When they are compared with API.md's routes
    wrong = {
        d: sorted(_http_routes(functions[_camel(d)]["Properties"]))
        for d, routes in ROUTES.items()
        if _http_routes(functions[_camel(d)]["Properties"]) != routes
    }
    # Then each function serves exactly its routes, on the one HttpApi
    assert not wrong, f"functions with the wrong routes: {wrong}"
    for res in functions.values():
        for ev in (res["Properties"].get("Events") or {}).values():
            if ev.get("Type") == "HttpApi":
                assert ev["Properties"]["ApiId"] == {"Ref": "HttpApi"}


def test_every_function_has_its_code(functions: dict[str, dict[str, Any]]) -> None:
    # Given every function of the template (HTTP routes, the authorizer, the event consumer)
    # When its handler's source file is looked up
    missing = sorted(
        f"{name} -> {_code_file(res['Properties']).relative_to(ROOT)}"
        for name, res in functions.items()
        if not _code_file(res["Properties"]).is_file()
    )
    # Then it exists
    assert not missing, "handlers without code:\n  " + "\n  ".join(missing)


def test_only_health_docs_and_the_console_are_public(functions: dict[str, dict[str, Any]]) -> None:
    # Given every HttpApi event
    public: set[tuple[str, str]] = set()
    for res in functions.values():
        for ev in (res["Properties"].get("Events") or {}).values():
            if ev.get("Type") != "HttpApi":
                continue
            # When its Auth says Authorizer: NONE
            if (ev["Properties"].get("Auth") or {}).get("Authorizer") == "NONE":
                public.add((ev["Properties"]["Method"], ev["Properties"]["Path"]))
    # Then only liveness, the docs and the console's static files skip the authorizer
    assert public == PUBLIC_ROUTES


def test_authorizer_is_the_default_and_caches_at_most_a_minute(template: dict[str, Any]) -> None:
    # Given the HttpApi
    api = template["Resources"]["HttpApi"]
    assert api["Type"] == "AWS::Serverless::HttpApi"
    # When its auth settings are read
    auth = api["Properties"]["Auth"]
    authorizer = auth["Authorizers"][auth["DefaultAuthorizer"]]
    # Then every route goes through the Lambda authorizer (v2 payload, simple responses),
    # keyed on the Authorization header, cached ≤ 60 s so a revoked key dies within a minute
    assert auth["DefaultAuthorizer"] == "LambdaAuthorizer"
    # (SnapStart=on: the authorizer's alias, like every route's; see the SnapStart tests below)
    assert _when(authorizer["FunctionArn"], snapstart=False) == {"Fn::GetAtt": ["AuthorizerFunction", "Arn"]}
    assert _when(authorizer["FunctionArn"], snapstart=True) == {"Ref": "AuthorizerFunction.Alias"}
    assert authorizer["AuthorizerPayloadFormatVersion"] == "2.0"
    assert authorizer["EnableSimpleResponses"] is True
    assert authorizer["Identity"]["Headers"] == ["Authorization"]
    assert 0 <= int(authorizer["Identity"]["ReauthorizeEvery"]) <= 60


@pytest.mark.parametrize("dirname", sorted(READ_ONLY))
def test_read_only_functions_cannot_write(functions: dict[str, dict[str, Any]], dirname: str) -> None:
    # Given a function that only reads
    props = functions[_camel(dirname)]["Properties"]
    if dirname == "authorizer":
        # Then the authorizer may only GetItem the API key lookups (partition key:<sha256>)
        assert props["Policies"] == [
            {
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": "dynamodb:GetItem",
                        "Resource": {"Fn::GetAtt": ["MemoryTable", "Arn"]},
                        "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["key:*"]}},
                    }
                ]
            }
        ]
        return
    # When its policies are listed
    names = _policy_names(props)
    # Then they are read-only policy templates, never CRUD, PutEvents, Encrypt or inline statements (a
    # reader of minds' corpora also the snapshot readers' policy: below, it sends SnapshotDue only)
    allowed = READ_POLICIES | ({"SnapshotReadPolicy"} if dirname in SNAPSHOT_READERS else set())
    assert names <= allowed, f"{dirname} has write-capable policies: {sorted(names - allowed)}"
    if dirname in {"health", "docs", "console"}:
        assert not names, f"{dirname} needs no AWS access"


def test_listing_minds_reads_and_may_only_put_the_default_minds_created_at(
    functions: dict[str, dict[str, Any]],
) -> None:
    # Given GET /minds, which stores the default mind's item once (its key and created_at)
    policies = functions["MindsListFunction"]["Properties"]["Policies"]
    # Then it reads, and its one write is a PutItem of those three attributes only
    assert policies == [
        {"DynamoDBReadPolicy": {"TableName": {"Ref": "MemoryTable"}}},
        {
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": "dynamodb:PutItem",
                    "Resource": {"Fn::GetAtt": ["MemoryTable", "Arn"]},
                    "Condition": {
                        "ForAllValues:StringEquals": {"dynamodb:Attributes": ["pk", "sk", "created_at"]}
                    },
                }
            ]
        },
    ]


def test_writers_and_decrypters_have_what_they_need(functions: dict[str, dict[str, Any]]) -> None:
    # Given every function outside the read-only set (and GET /minds, above; the snapshot writer and
    # the change events: their own tests)
    for dirname in (
        set(ROUTES)
        - READ_ONLY
        - {"minds_list", "snapshot_writer", "change_events", "webhooks_test"}
        - EXPORT_FILES  # (their own test)
    ):
        names = _policy_names(functions[_camel(dirname)]["Properties"])
        # Then it may write the table
        assert "DynamoDBCrudPolicy" in names, dirname

    # And exactly the Gemini callers can decrypt provider keys, and only providers_put encrypts
    def having(policy: str) -> set[str]:
        return {d for d in ROUTES if policy in _policy_names(functions[_camel(d)]["Properties"])}

    assert having("KMSDecryptPolicy") == KMS_DECRYPTERS
    assert having("KMSEncryptPolicy") == {"providers_put", "webhooks_create"}
    # And only ingest (SessionSummaryDue) and the change events publish events; ingest keeps
    # idempotency records, DELETE /me deletes them
    assert having("EventBridgePutEventsPolicy") == {"memory_ingest", "change_events"}
    idempotent = {
        d
        for d in ROUTES
        for policy in functions[_camel(d)]["Properties"].get("Policies") or []
        if isinstance(policy, dict)
        and any(v == {"TableName": {"Ref": "IdempotencyTable"}} for v in policy.values())
    }
    assert idempotent == {"memory_ingest", "me_delete"}


def test_change_events_come_from_the_tables_stream_in_order_with_a_dead_letter_queue(
    template: dict[str, Any], functions: dict[str, dict[str, Any]]
) -> None:
    # Given the memory table and the change-events function
    table = template["Resources"]["MemoryTable"]["Properties"]
    props = functions["ChangeEventsFunction"]["Properties"]
    # Then the table streams new images, and the function's only event is that stream
    assert table["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}
    (source,) = props["Events"].values()
    assert source["Type"] == "DynamoDB"
    stream = source["Properties"]
    assert stream["Stream"] == {"Fn::GetAtt": ["MemoryTable", "StreamArn"]}
    # one poller per shard, partial batch failures reported (the checkpoint keeps the order), bisect
    assert stream.get("ParallelizationFactor", 1) == 1
    assert stream["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert stream["BisectBatchOnFunctionError"] is True
    # what is given up on goes to a queue of the stack (SAM grants SendMessage from its Type)
    on_failure = stream["DestinationConfig"]["OnFailure"]
    assert on_failure == {
        "Type": "SQS",
        "Destination": {"Fn::GetAtt": ["ChangeEventsDeadLetterQueue", "Arn"]},
    }
    assert template["Resources"]["ChangeEventsDeadLetterQueue"]["Type"] == "AWS::SQS::Queue"
    # only new change-log entries reach it (the filter), and the pattern is JSON
    (flt,) = stream["FilterCriteria"]["Filters"]
    assert json.loads(flt["Pattern"]) == {
        "eventName": ["INSERT"],
        "dynamodb": {"NewImage": {"log_seq": {"N": [{"exists": True}]}}},
    }
    # And it reads nothing of the table: it may only put events on MemoryBus
    assert props["Policies"] == [{"EventBridgePutEventsPolicy": {"EventBusName": {"Ref": "MemoryBus"}}}]


def test_memory_table_keeps_raw_messages_briefly_and_everything_recoverably(template: dict[str, Any]) -> None:
    # Given the memory table
    table = template["Resources"]["MemoryTable"]
    props = table["Properties"]
    # When its definition is read
    keys = {k["AttributeName"]: k["KeyType"] for k in props["KeySchema"]}
    types = {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]}
    # Then it is pk/sk strings, on demand, TTL on `ttl`, point-in-time recovery and encryption on
    assert table["Type"] == "AWS::DynamoDB::Table"
    assert keys == {"pk": "HASH", "sk": "RANGE"}
    assert types == {"pk": "S", "sk": "S", "tl_pk": "S", "tl_sk": "S"}
    # and its one index is the sparse, keys-only timeline (GET /memory/timeline)
    (index,) = props["GlobalSecondaryIndexes"]
    assert index["IndexName"] == "timeline"
    assert [(k["AttributeName"], k["KeyType"]) for k in index["KeySchema"]] == [
        ("tl_pk", "HASH"),
        ("tl_sk", "RANGE"),
    ]
    assert index["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}
    assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert props["SSESpecification"]["SSEEnabled"] is True
    assert table.get("DeletionPolicy") == "Retain"


def test_idempotency_table_has_the_powertools_composite_layout(template: dict[str, Any]) -> None:
    # Given the idempotency table
    props = template["Resources"]["IdempotencyTable"]["Properties"]
    # Then it has Powertools' composite key (a partition per user, the request hash as sort key: DELETE
    # /me can find a user's records) and its TTL attribute
    assert [(k["AttributeName"], k["KeyType"]) for k in props["KeySchema"]] == [
        ("id", "HASH"),
        ("sk", "RANGE"),
    ]
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}


def test_summaries_are_delivered_with_retries_and_a_dead_letter_queue(
    functions: dict[str, dict[str, Any]],
) -> None:
    # Given the session summarizer's events
    events = functions["SummarizeSessionFunction"]["Properties"]["Events"]
    rule = events["Summary"]
    # Then one EventBridge rule on MemoryBus matches SessionSummaryDue, retried and dead-lettered
    assert rule["Type"] == "EventBridgeRule"
    props = rule["Properties"]
    assert props["EventBusName"] == {"Ref": "MemoryBus"}
    assert props["Pattern"] == {"source": ["synapse.memory"], "detail-type": ["SessionSummaryDue"]}
    assert int(props["RetryPolicy"]["MaximumRetryAttempts"]) >= 1
    assert int(props["RetryPolicy"]["MaximumEventAgeInSeconds"]) >= 60
    assert props["DeadLetterConfig"]["Type"] == "SQS"


def test_globals_give_every_function_the_same_runtime_and_settings(template: dict[str, Any]) -> None:
    # Given the function globals
    fn = template["Globals"]["Function"]
    env = fn["Environment"]["Variables"]
    # Then the runtime, layer and the settings the shared package reads are there
    assert fn["Runtime"] == "python3.13"
    assert fn["Layers"] == [{"Ref": "CommonLayer"}]
    assert fn["Tracing"] == "Active"
    assert int(fn["Timeout"]) <= 29
    for name in (
        "MEMORY_TABLE", "IDEMPOTENCY_TABLE", "EVENT_BUS_NAME", "KMS_KEY_ID", "SNAPSHOT_BUCKET",
        "JWT_JWKS_URL", "JWT_ISSUER", "JWT_AUDIENCE", "GEMINI_BASE_URL",
        "EMBEDDING_MODEL", "EMBEDDING_DIM", "LLM_MODEL", "API_KEY_PREFIX", "SUMMARY_EVERY",
        "RAW_MESSAGE_TTL_DAYS", "LOCAL_EMBEDDER", "POWERTOOLS_SERVICE_NAME",
    ):  # fmt: skip
        assert name in env, name
    assert env["LOCAL_EMBEDDER"] == "none"
    # And the secrets reach only the functions that use them: the JWT secret the authorizer, the
    # service's Gemini key the functions that call a model
    assert "JWT_SECRET" not in env and "GEMINI_API_KEY" not in env

    def holders(name: str) -> set[str]:
        return {
            logical_id
            for logical_id, res in template["Resources"].items()
            if res["Type"] == "AWS::Serverless::Function"
            and name in ((res["Properties"].get("Environment") or {}).get("Variables") or {})
        }

    assert holders("JWT_SECRET") == {"AuthorizerFunction"}
    assert holders("GEMINI_API_KEY") == {
        "ProposalAcceptFunction",
        "MindsConsolidateFunction",
        "ConsolidateDailyFunction",
        "MemoryCreateFunction",
        "MemoryBatchFunction",
        "MemoryImportFunction",
        "MemoryUpdateFunction",
        "MemoryRestoreFunction",
        "MemoryIngestFunction",
        "MemoryRecallFunction",
        "MemoryContextFunction",
        "McpFunction",
        "MemorySummarizeFunction",
        "SummarizeSessionFunction",
    }
    # And the secrets are never echoed back by CloudFormation
    params = template["Parameters"]
    assert params["JwtSecret"]["NoEcho"] is True
    assert params["GeminiApiKey"]["NoEcho"] is True


def test_common_layer_is_built_from_layers_common(template: dict[str, Any]) -> None:
    # Given the shared layer
    layer = template["Resources"]["CommonLayer"]
    # Then sam build runs the root Makefile's build-CommonLayer target for it (python3.13 runtime)
    assert layer["Type"] == "AWS::Serverless::LayerVersion"
    assert layer["Properties"]["ContentUri"] == "layers/common/"
    assert layer["Properties"]["CompatibleRuntimes"] == ["python3.13"]
    assert layer["Metadata"]["BuildMethod"] == "makefile"
    context = ROOT / layer["Metadata"]["ContextPath"]
    assert "build-CommonLayer:" in (context / "Makefile").read_text(encoding="utf-8")


def test_every_function_has_a_sample_event(functions: dict[str, dict[str, Any]]) -> None:
    # Given the function dirs
    # When events/<dir>.json is looked up
    missing = sorted(f"events/{d}.json" for d in ROUTES if not (ROOT / "events" / f"{d}.json").is_file())
    # Then every function has one (sam local invoke -e, and the integration tests)
    assert not missing, f"missing sample events: {missing}"


def _http_route_samples() -> list[Path]:
    """The sample events of HTTP routes (not the authorizer's REQUEST, the EventBridge or the stream
    samples)."""
    samples = []
    for path in sorted((ROOT / "events").glob("*.json")):
        event = json.loads(path.read_text(encoding="utf-8"))
        if event.get("version") == "2.0" and event.get("type") != "REQUEST":
            samples.append(path)
    return samples


def test_http_route_samples_are_most_samples() -> None:
    # the filter above must not quietly drop the samples it is meant to check (the others: the
    # authorizer's, the EventBridge consumers', the stream's, the schedule's and the queue's)
    others = {p.name for p in (ROOT / "events").glob("*.json")} - {p.name for p in _http_route_samples()}
    assert {n for n in others if not n.startswith("authorizer")} == {
        "summarize_session.json",
        "snapshot_writer.json",
        "change_events.json",
        "consolidate_daily.json",
        "webhook_delivery.json",
        "export_writer.json",
    }
    assert len(others) <= 8


@pytest.mark.parametrize("path", _http_route_samples(), ids=lambda p: p.name)
def test_sample_http_events_match_a_template_route(functions: dict[str, dict[str, Any]], path: Path) -> None:
    # Given a sample event of an HTTP route
    event = json.loads(path.read_text(encoding="utf-8"))
    # When its route key is looked up among the template's routes
    all_routes = {f"{m} {p}" for res in functions.values() for m, p in _http_routes(res["Properties"])}
    # Then it names a real route, and its method and raw path agree with it
    assert event["routeKey"] in all_routes
    assert event["requestContext"]["routeKey"] == event["routeKey"]
    method, _ = event["routeKey"].split(" ", 1)
    assert event["requestContext"]["http"]["method"] == method
    assert event["rawPath"] == event["requestContext"]["http"]["path"]
    if event["routeKey"] not in {f"{m} {p}" for m, p in PUBLIC_ROUTES}:
        ctx = event["requestContext"]["authorizer"]["lambda"]
        assert set(ctx) == {"userId", "kind", "scopes", "keyId"}


@pytest.mark.parametrize("path", sorted((ROOT / "events").glob("authorizer*.json")), ids=lambda p: p.name)
def test_sample_authorizer_events_are_v2_requests_with_the_identity_source(path: Path) -> None:
    # Given a sample authorizer event
    event = json.loads(path.read_text(encoding="utf-8"))
    # Then it is what API Gateway sends a REQUEST authorizer with payload 2.0
    assert (event["version"], event["type"]) == ("2.0", "REQUEST")
    assert event["identitySource"] == [event["headers"]["authorization"]]
    assert "authorizer" not in event["requestContext"]


def test_sample_summary_event_matches_the_rule(functions: dict[str, dict[str, Any]]) -> None:
    # Given the summarizer's sample event and its rule
    event = json.loads((ROOT / "events/summarize_session.json").read_text(encoding="utf-8"))
    pattern = functions["SummarizeSessionFunction"]["Properties"]["Events"]["Summary"]["Properties"][
        "Pattern"
    ]
    # Then the rule matches it and it carries the contract's detail
    assert event["source"] in pattern["source"]
    assert event["detail-type"] in pattern["detail-type"]
    assert set(event["detail"]) == {"userId", "sessionId", "msgCount"}


def test_sample_stream_event_passes_the_filter_and_is_what_the_table_would_stream(
    functions: dict[str, dict[str, Any]],
) -> None:
    # Given the change-events sample and its event source's filter
    from local.events import matches

    event = json.loads((ROOT / "events/change_events.json").read_text(encoding="utf-8"))
    stream = functions["ChangeEventsFunction"]["Properties"]["Events"]["Stream"]["Properties"]
    patterns = [json.loads(f["Pattern"]) for f in stream["FilterCriteria"]["Filters"]]
    # Then every record is a new change-log entry of a user's partition that the filter passes
    for record in event["Records"]:
        assert any(matches(p, record) for p in patterns)
        assert record["dynamodb"]["Keys"]["pk"]["S"].startswith("mem:")
        assert ":chg:" in ":" + record["dynamodb"]["Keys"]["sk"]["S"]
    # and the filter drops a memory's own record and a TTL deletion of an entry
    memory = {"eventName": "INSERT", "dynamodb": {"NewImage": {"sk": {"S": "nug:x"}}}}
    removal = {**event["Records"][0], "eventName": "REMOVE"}
    assert not any(matches(p, memory) or matches(p, removal) for p in patterns)


def test_snapstart_is_a_parameter_and_off_by_default(template: dict[str, Any]) -> None:
    # Given the SnapStart parameter and its condition
    param = template["Parameters"]["SnapStart"]
    # Then it is on or off, off unless asked for
    assert param["AllowedValues"] == ["on", "off"]
    assert param["Default"] == "off"
    assert template["Conditions"]["SnapStartOn"] == {"Fn::Equals": [{"Ref": "SnapStart"}, "on"]}
    # And AWS::LanguageExtensions runs before SAM: SAM refuses Fn::If in AutoPublishAlias, the
    # language extensions resolve it from the parameters first
    assert template["Transform"] == ["AWS::LanguageExtensions", "AWS::Serverless-2016-10-31"]


@pytest.mark.parametrize("on", [True, False], ids=["SnapStart=on", "SnapStart=off"])
def test_snapstart_on_gives_every_function_snapshots_and_an_alias_and_off_neither(
    template: dict[str, Any], functions: dict[str, dict[str, Any]], on: bool
) -> None:
    # Given every function, all of them Python (the runtime of the globals, never overridden)
    glob = template["Globals"]["Function"]
    assert glob["Runtime"] == "python3.13"
    for name, res in functions.items():
        props = {**glob, **res["Properties"]}
        assert props["Runtime"] == "python3.13", name
        # When the stack is deployed with SnapStart on (off)
        snap = _when(props.get("SnapStart", NO_VALUE), snapstart=on)
        alias = _when(props.get("AutoPublishAlias", NO_VALUE), snapstart=on)
        # Then each function has SnapStart on its published versions and the alias `live`, which
        # SAM makes the target of its HttpApi events and event rules (off: neither, $LATEST)
        if on:
            assert snap == {"ApplyOn": "PublishedVersions"}, name
            assert alias == "live", name
        else:
            assert snap == NO_VALUE, name
            assert alias == NO_VALUE, name
        # (an AutoPublishAlias in the globals would not be resolved: the language extensions do not
        # read the Globals section, so it stays on each function)
        assert "AutoPublishAlias" in res["Properties"], name
    assert "AutoPublishAlias" not in glob


def test_webhooks_go_from_the_bus_through_a_queue_with_a_dead_letter_queue_and_only_delivery_decrypts(
    template: dict[str, Any], functions: dict[str, dict[str, Any]]
) -> None:
    resources = template["Resources"]
    # Given the rule on MemoryBus: every change event, to the webhook queue (which lets the rule send)
    rule = resources["WebhookEventsRule"]["Properties"]
    assert rule["EventBusName"] == {"Ref": "MemoryBus"}
    assert rule["EventPattern"]["source"] == ["synapse.memory"]
    assert len(rule["EventPattern"]["detail-type"]) == 9
    assert rule["Targets"] == [{"Id": "webhook-queue", "Arn": {"Fn::GetAtt": ["WebhookQueue", "Arn"]}}]
    statement = resources["WebhookQueuePolicy"]["Properties"]["PolicyDocument"]["Statement"][0]
    assert statement["Condition"] == {
        "ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": ["WebhookEventsRule", "Arn"]}}
    }
    # And the queue keeps messages 14 days, with a dead-letter queue past the retries' receives
    queue = resources["WebhookQueue"]["Properties"]
    assert queue["MessageRetentionPeriod"] == 1209600
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": ["WebhookDeadLetterQueue", "Arn"]}
    assert queue["RedrivePolicy"]["maxReceiveCount"] > 8
    # And the delivery function reads it, reporting partial failures, within the visibility timeout
    props = functions["WebhookDeliveryFunction"]["Properties"]
    (source,) = props["Events"].values()
    assert source["Type"] == "SQS"
    assert source["Properties"]["Queue"] == {"Fn::GetAtt": ["WebhookQueue", "Arn"]}
    assert source["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert queue["VisibilityTimeout"] >= 6 * props["Timeout"]

    # And the secrets' key: only the delivery function decrypts with it, only POST /webhooks encrypts
    def with_key(policy: str) -> set[str]:
        return {
            name
            for name, fn in functions.items()
            for p in fn["Properties"].get("Policies") or []
            if isinstance(p, dict) and p.get(policy) == {"KeyId": {"Ref": "WebhookKey"}}
        }

    assert with_key("KMSDecryptPolicy") == {"WebhookDeliveryFunction"}
    assert with_key("KMSEncryptPolicy") == {"WebhooksCreateFunction"}


# --- minds' snapshots --------------------------------------------------------------------------------


def _statements(template: dict[str, Any], policy: str) -> list[dict[str, Any]]:
    res = template["Resources"][policy]
    assert res["Type"] == "AWS::IAM::ManagedPolicy"
    statements: list[dict[str, Any]] = res["Properties"]["PolicyDocument"]["Statement"]
    return statements


SNAPSHOT_OBJECTS = {"Fn::Sub": "${SnapshotBucket.Arn}/snapshots/*"}
SNAPSHOT_BUCKET = {"Fn::GetAtt": ["SnapshotBucket", "Arn"]}
VIA_S3 = {"StringEquals": {"kms:ViaService": {"Fn::Sub": "s3.${AWS::Region}.amazonaws.com"}}}


def test_the_snapshot_bucket_is_private_encrypted_with_its_key_and_expires_what_is_left(
    template: dict[str, Any],
) -> None:
    # Given the snapshot bucket
    bucket = template["Resources"]["SnapshotBucket"]
    props = bucket["Properties"]
    assert bucket["Type"] == "AWS::S3::Bucket"
    # Then it is encrypted by default with the stack's snapshot key (SSE-KMS, a bucket key)
    (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "aws:kms",
        "KMSMasterKeyID": {"Fn::GetAtt": ["SnapshotKey", "Arn"]},
    }
    assert rule["BucketKeyEnabled"] is True
    key = template["Resources"]["SnapshotKey"]
    assert key["Type"] == "AWS::KMS::Key" and key["Properties"]["EnableKeyRotation"] is True
    # And nothing in it can be made public; objects belong to the bucket's owner (no ACLs)
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    # And a snapshot nothing rewrote for a while expires (a backstop to the deletions), and an export
    # file after a day
    life, files = props["LifecycleConfiguration"]["Rules"]
    assert life["Status"] == "Enabled" and life["Prefix"] == "snapshots/"
    assert 1 <= int(life["ExpirationInDays"]) <= 90
    assert int(life["NoncurrentVersionExpiration"]["NoncurrentDays"]) <= 7
    assert files["Status"] == "Enabled" and files["Prefix"] == "exports/"
    assert int(files["ExpirationInDays"]) == 1
    assert int(files["NoncurrentVersionExpiration"]["NoncurrentDays"]) == 1
    # And its policy refuses plain HTTP, and objects under another encryption or key
    statements = template["Resources"]["SnapshotBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert template["Resources"]["SnapshotBucketPolicy"]["Properties"]["Bucket"] == {"Ref": "SnapshotBucket"}
    by_sid = {st["Sid"]: st for st in statements}
    assert all(st["Effect"] == "Deny" for st in statements)
    assert by_sid["DenyPlainHttp"]["Condition"] == {"Bool": {"aws:SecureTransport": False}}
    assert by_sid["DenyOtherEncryption"]["Condition"] == {
        "StringNotEqualsIfExists": {"s3:x-amz-server-side-encryption": "aws:kms"}
    }
    assert by_sid["DenyOtherKeys"]["Condition"] == {
        "StringNotEqualsIfExists": {
            "s3:x-amz-server-side-encryption-aws-kms-key-id": {"Fn::GetAtt": ["SnapshotKey", "Arn"]}
        }
    }
    # And every function is told the bucket's name
    assert template["Globals"]["Function"]["Environment"]["Variables"]["SNAPSHOT_BUCKET"] == {
        "Ref": "SnapshotBucket"
    }


def test_snapshot_readers_read_and_ask_deleters_delete_and_no_one_else_touches_them(
    template: dict[str, Any], functions: dict[str, dict[str, Any]]
) -> None:
    def having(policy: str) -> set[str]:
        return {d for d in ROUTES if policy in _policy_names(functions[_camel(d)]["Properties"])}

    # Given the two managed policies of the snapshots
    # Then readers may GET a snapshot, list the bucket (without it S3 answers a missing snapshot with
    # 403, not 404, and the reader would never ask for one), decrypt through S3 only, and send
    # SnapshotDue only
    assert _statements(template, "SnapshotReadPolicy") == [
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": SNAPSHOT_OBJECTS},
        {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": SNAPSHOT_BUCKET},
        {
            "Effect": "Allow",
            "Action": "kms:Decrypt",
            "Resource": {"Fn::GetAtt": ["SnapshotKey", "Arn"]},
            "Condition": VIA_S3,
        },
        {
            "Effect": "Allow",
            "Action": "events:PutEvents",
            "Resource": {"Fn::GetAtt": ["MemoryBus", "Arn"]},
            "Condition": {
                "StringEquals": {"events:source": "synapse.memory", "events:detail-type": "SnapshotDue"}
            },
        },
    ]
    # And deleters may list the snapshots' prefix and delete objects under it, nothing else
    assert _statements(template, "SnapshotDeletePolicy") == [
        {
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": SNAPSHOT_BUCKET,
            "Condition": {"StringLike": {"s3:prefix": ["snapshots/*"]}},
        },
        {"Effect": "Allow", "Action": "s3:DeleteObject", "Resource": SNAPSHOT_OBJECTS},
    ]
    # And exactly the readers of minds' corpora read, exactly the deletions of minds and users delete
    assert having("SnapshotReadPolicy") == SNAPSHOT_READERS
    assert having("SnapshotDeletePolicy") == SNAPSHOT_DELETERS
    # And no function but the writers and the export files' reader has an S3 or snapshot-key statement
    # of its own
    for dirname in set(ROUTES) - {"snapshot_writer"} - EXPORT_FILES:
        text = json.dumps(functions[_camel(dirname)]["Properties"].get("Policies") or [])
        assert "SnapshotBucket" not in text and "SnapshotKey" not in text, dirname


def test_the_snapshot_writer_reads_the_table_and_writes_snapshots_only(
    functions: dict[str, dict[str, Any]],
) -> None:
    # Given the snapshot writer
    props = functions["SnapshotWriterFunction"]["Properties"]
    policies = props["Policies"]
    # Then it reads the table (never writes it), and may HEAD/GET, PUT and DELETE snapshots and use
    # the snapshot key through S3 only
    assert policies[0] == {"DynamoDBReadPolicy": {"TableName": {"Ref": "MemoryTable"}}}
    assert policies[1] == {
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
                "Resource": SNAPSHOT_OBJECTS,
            },
            # (a HEAD of a missing snapshot: 404 only to a caller that may list the bucket)
            {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": SNAPSHOT_BUCKET},
            {
                "Effect": "Allow",
                "Action": ["kms:GenerateDataKey", "kms:Decrypt"],
                "Resource": {"Fn::GetAtt": ["SnapshotKey", "Arn"]},
                "Condition": VIA_S3,
            },
        ]
    }
    assert len(policies) == 2
    # And it runs on SnapshotDue from MemoryBus, a failed write not retried (the next reader asks again)
    rule = props["Events"]["Snapshot"]
    assert rule["Type"] == "EventBridgeRule"
    assert rule["Properties"]["EventBusName"] == {"Ref": "MemoryBus"}
    assert rule["Properties"]["Pattern"] == {"source": ["synapse.memory"], "detail-type": ["SnapshotDue"]}
    assert props["EventInvokeConfig"]["MaximumRetryAttempts"] == 0


def test_sample_snapshot_event_matches_the_rule(functions: dict[str, dict[str, Any]]) -> None:
    # Given the writer's sample event and its rule
    event = json.loads((ROOT / "events/snapshot_writer.json").read_text(encoding="utf-8"))
    pattern = functions["SnapshotWriterFunction"]["Properties"]["Events"]["Snapshot"]["Properties"]["Pattern"]
    # Then the rule matches it and it carries what readers send (aws/events.py)
    assert event["source"] in pattern["source"]
    assert event["detail-type"] in pattern["detail-type"]
    assert set(event["detail"]) == {"userId", "mindId", "epoch", "seq", "modelKey"}


def test_export_files_are_written_by_the_writer_read_by_their_url_and_deleted_with_the_user(
    template: dict[str, Any], functions: dict[str, dict[str, Any]]
) -> None:
    via_s3 = {"Fn::GetAtt": ["SnapshotKey", "Arn"]}
    # Given the three functions of export files
    create = functions["MeExportsCreateFunction"]["Properties"]
    get = functions["MeExportsGetFunction"]["Properties"]
    writer = functions["ExportWriterFunction"]["Properties"]
    # Then POST /me/exports writes its record and sends ExportRequested only
    assert create["Policies"][0] == {"DynamoDBCrudPolicy": {"TableName": {"Ref": "MemoryTable"}}}
    assert create["Policies"][1]["Statement"] == [
        {
            "Effect": "Allow",
            "Action": "events:PutEvents",
            "Resource": {"Fn::GetAtt": ["MemoryBus", "Arn"]},
            "Condition": {
                "StringEquals": {"events:source": "synapse.memory", "events:detail-type": "ExportRequested"}
            },
        }
    ]
    assert len(create["Policies"]) == 2
    # And GET /me/exports/{id} reads the table and export files (its presigned URL carries its rights),
    # decrypting through S3 only: no snapshot, no write
    assert get["Policies"] == [
        {"DynamoDBReadPolicy": {"TableName": {"Ref": "MemoryTable"}}},
        {
            "Statement": [
                {"Effect": "Allow", "Action": "s3:GetObject", "Resource": EXPORT_OBJECTS},
                {"Effect": "Allow", "Action": "kms:Decrypt", "Resource": via_s3, "Condition": VIA_S3},
            ]
        },
    ]
    # And the writer reads the table, updates (only) the export's record, and writes export files
    assert writer["Policies"] == [
        {"DynamoDBReadPolicy": {"TableName": {"Ref": "MemoryTable"}}},
        {
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": "dynamodb:UpdateItem",
                    "Resource": {"Fn::GetAtt": ["MemoryTable", "Arn"]},
                },
                {
                    "Effect": "Allow",
                    "Action": ["s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject"],
                    "Resource": EXPORT_OBJECTS,
                },
                {
                    "Effect": "Allow",
                    "Action": ["kms:GenerateDataKey", "kms:Decrypt"],
                    "Resource": via_s3,
                    "Condition": VIA_S3,
                },
            ]
        },
    ]
    # And it runs on ExportRequested with Lambda's longest timeout, a failed export not retried
    rule = writer["Events"]["Export"]
    assert rule["Type"] == "EventBridgeRule"
    assert rule["Properties"]["Pattern"] == {"source": ["synapse.memory"], "detail-type": ["ExportRequested"]}
    assert writer["Timeout"] == 900
    assert writer["EventInvokeConfig"]["MaximumRetryAttempts"] == 0
    # And DELETE /me may list and delete export files, through a policy of its own
    assert _statements(template, "ExportDeletePolicy") == [
        {
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": SNAPSHOT_BUCKET,
            "Condition": {"StringLike": {"s3:prefix": ["exports/*"]}},
        },
        {"Effect": "Allow", "Action": "s3:DeleteObject", "Resource": EXPORT_OBJECTS},
    ]
    deleters = {
        d for d in ROUTES if "ExportDeletePolicy" in _policy_names(functions[_camel(d)]["Properties"])
    }
    assert deleters == {"me_delete"}


def test_sample_export_event_matches_the_rule(functions: dict[str, dict[str, Any]]) -> None:
    # Given the export writer's sample event and its rule
    event = json.loads((ROOT / "events/export_writer.json").read_text(encoding="utf-8"))
    pattern = functions["ExportWriterFunction"]["Properties"]["Events"]["Export"]["Properties"]["Pattern"]
    # Then the rule matches it and it carries what POST /me/exports sends (aws/events.py)
    assert event["source"] in pattern["source"]
    assert event["detail-type"] in pattern["detail-type"]
    assert set(event["detail"]) == {"userId", "exportId"}
