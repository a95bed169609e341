"""Read template.yaml: functions, HTTP routes, the authorizer, event rules and stream triggers, tables,
bus and key.

The template is the one source of truth for the local run: there is no second route table in code.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_SHORT_TAGS = {
    "Ref": "Ref",
    "GetAtt": "Fn::GetAtt",
    "Sub": "Fn::Sub",
    "Join": "Fn::Join",
    "If": "Fn::If",
    "Equals": "Fn::Equals",
    "Not": "Fn::Not",
    "And": "Fn::And",
    "Or": "Fn::Or",
    "Select": "Fn::Select",
    "Split": "Fn::Split",
    "FindInMap": "Fn::FindInMap",
    "ImportValue": "Fn::ImportValue",
    "Base64": "Fn::Base64",
    "GetAZs": "Fn::GetAZs",
    "Condition": "Condition",
}


class CfnLoader(yaml.SafeLoader):
    """A SafeLoader that turns CloudFormation short tags into their long-form dicts."""


def _construct_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = _SHORT_TAGS.get(suffix, f"Fn::{suffix}")
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if name == "Fn::GetAtt" and isinstance(value, str):
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


CfnLoader.add_multi_constructor("!", _construct_tag)


def load_yaml(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        data = yaml.load(fh, Loader=CfnLoader)  # noqa: S506 - a SafeLoader subclass
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a CloudFormation template")
    return data


@dataclass(frozen=True)
class Function:
    logical_id: str
    file: Path  # the handler module's file
    attr: str  # the handler function's name in that module
    code_dir: Path
    environment: dict[str, Any]  # unresolved (Globals merged with the function's own)
    timeout: int
    memory: int


@dataclass(frozen=True)
class RouteDef:
    method: str  # upper case, or ANY
    path: str
    function: str  # logical id
    auth: bool  # the default authorizer applies


@dataclass(frozen=True)
class AuthorizerDef:
    name: str
    function: str  # logical id
    identity_headers: tuple[str, ...]


@dataclass(frozen=True)
class RuleDef:
    name: str
    function: str
    bus: str  # resolved bus name ("default" when unset)
    pattern: dict[str, Any]
    retries: int
    queue: str | None = None  # an AWS::Events::Rule whose target is an SQS queue: its logical id


@dataclass(frozen=True)
class QueueSourceDef:
    """A function's `SQS` event: the queue (logical id) Lambda polls for it, and its batch size."""

    name: str
    function: str
    queue: str
    batch_size: int


@dataclass(frozen=True)
class ScheduleDef:
    """A function's `Schedule`/`ScheduleV2` event (e.g. the daily consolidation): the local run does
    not fire it on a clock; `make invoke` runs it with its sample event."""

    function: str
    expression: str


@dataclass(frozen=True)
class StreamSourceDef:
    """A function's `DynamoDB` event: the table whose stream it reads, and how Lambda polls it."""

    name: str
    function: str
    table: str  # logical id of the table
    batch_size: int
    filters: tuple[dict[str, Any], ...]  # FilterCriteria patterns (none: every record)
    retries: int  # MaximumRetryAttempts (-1: until the record is too old)
    max_age: int  # MaximumRecordAgeInSeconds (-1: forever)


@dataclass(frozen=True)
class CorsDef:
    allow_origins: tuple[str, ...]
    allow_headers: tuple[str, ...]
    allow_methods: tuple[str, ...]
    expose_headers: tuple[str, ...]
    max_age: int | None
    allow_credentials: bool


@dataclass(frozen=True)
class ThrottleDef:
    """The HTTP API's DefaultRouteSettings: an API-wide token bucket."""

    rate: float  # requests per second, steady state
    burst: int


@dataclass
class Template:
    root: Path
    raw: dict[str, Any]
    parameters: dict[str, Any] = field(default_factory=dict)
    functions: dict[str, Function] = field(default_factory=dict)
    routes: list[RouteDef] = field(default_factory=list)
    authorizer: AuthorizerDef | None = None
    cors: CorsDef | None = None
    throttle: ThrottleDef | None = None
    rules: list[RuleDef] = field(default_factory=list)
    streams: list[StreamSourceDef] = field(default_factory=list)
    schedules: list[ScheduleDef] = field(default_factory=list)
    queue_sources: list[QueueSourceDef] = field(default_factory=list)
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)  # logical id -> Properties
    buses: dict[str, dict[str, Any]] = field(default_factory=dict)
    keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    buckets: dict[str, dict[str, Any]] = field(default_factory=dict)

    def resources_of(self, kind: str) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for name, res in (self.raw.get("Resources") or {}).items():
            if isinstance(res, dict) and res.get("Type") == kind:
                out[name] = res.get("Properties") or {}
        return out

    def chosen(self, value: Any) -> Any:
        """`Fn::If` as CloudFormation resolves it with the parameters' defaults (the local run deploys
        nothing: e.g. SnapStart is off, so the authorizer is the function itself, not its alias).
        Conditions of the form `Fn::Equals [Ref <parameter>, <value>]` only; other values as they are."""
        if not (isinstance(value, dict) and set(value) == {"Fn::If"}):
            return value
        name, when_true, when_false = value["Fn::If"]
        test = ((self.raw.get("Conditions") or {}).get(name)) or {}
        left, right = test.get("Fn::Equals") or (None, None)
        if not (isinstance(left, dict) and set(left) == {"Ref"} and left["Ref"] in self.parameters):
            raise ValueError(f"condition {name}: only Fn::Equals of a parameter and a value is understood")
        default = (self.parameters[left["Ref"]] or {}).get("Default")
        return self.chosen(when_true if str(default) == str(right) else when_false)

    def table_name(self, logical_id: str) -> str:
        name = self.tables[logical_id].get("TableName")
        return name if isinstance(name, str) else logical_id

    def bucket_name(self, logical_id: str) -> str:
        """The bucket's BucketName, else a local name (S3's rules: lower case, digits, hyphens)."""
        name = self.buckets[logical_id].get("BucketName")
        return name if isinstance(name, str) else f"local-{logical_id.lower()}"

    def bucket_key(self, logical_id: str) -> str | None:
        """The template key (logical id) a bucket's default encryption names, if any (SSE-KMS)."""
        rules = (self.buckets[logical_id].get("BucketEncryption") or {}).get(
            "ServerSideEncryptionConfiguration"
        )
        for rule in rules or []:
            key = ((rule or {}).get("ServerSideEncryptionByDefault") or {}).get("KMSMasterKeyID")
            named = _getatt_resource(key) or _ref_name(key)
            if named in self.keys:
                return named
        return None

    def bus_name(self, logical_id: str) -> str:
        name = self.buses[logical_id].get("Name")
        return name if isinstance(name, str) else logical_id


def _ref_name(value: Any) -> str | None:
    if isinstance(value, dict) and set(value) == {"Ref"} and isinstance(value["Ref"], str):
        return value["Ref"]
    return None


def _getatt_resource(value: Any) -> str | None:
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        att = value["Fn::GetAtt"]
        if isinstance(att, list) and att:
            return str(att[0])
        if isinstance(att, str):
            return att.split(".", 1)[0]
    return None


def parse(path: Path) -> Template:
    raw = load_yaml(path)
    root = path.parent
    tpl = Template(root=root, raw=raw, parameters=dict(raw.get("Parameters") or {}))
    tpl.tables = tpl.resources_of("AWS::DynamoDB::Table")
    tpl.buses = tpl.resources_of("AWS::Events::EventBus")
    tpl.keys = tpl.resources_of("AWS::KMS::Key")
    tpl.queues = tpl.resources_of("AWS::SQS::Queue")
    tpl.buckets = tpl.resources_of("AWS::S3::Bucket")

    glob = ((raw.get("Globals") or {}).get("Function")) or {}
    glob_env = ((glob.get("Environment") or {}).get("Variables")) or {}
    glob_timeout = int(glob.get("Timeout", 3)) if isinstance(glob.get("Timeout", 3), int) else 3
    glob_memory = int(glob.get("MemorySize", 128)) if isinstance(glob.get("MemorySize", 128), int) else 128

    for name, props in tpl.resources_of("AWS::Serverless::Function").items():
        code_uri = props.get("CodeUri", ".")
        handler = str(props.get("Handler", "app.handler"))
        module_path, _, attr = handler.rpartition(".")
        code_dir = (root / str(code_uri)).resolve()
        env = dict(glob_env)
        env.update(((props.get("Environment") or {}).get("Variables")) or {})
        timeout = props.get("Timeout", glob_timeout)
        memory = props.get("MemorySize", glob_memory)
        tpl.functions[name] = Function(
            logical_id=name,
            file=code_dir / (module_path + ".py"),
            attr=attr,
            code_dir=code_dir,
            environment=env,
            timeout=timeout if isinstance(timeout, int) else glob_timeout,
            memory=memory if isinstance(memory, int) else glob_memory,
        )
        for ev_name, ev in (props.get("Events") or {}).items():
            if not isinstance(ev, dict):
                continue
            ev_props = ev.get("Properties") or {}
            if ev.get("Type") == "HttpApi":
                auth = ev_props.get("Auth") or {}
                tpl.routes.append(
                    RouteDef(
                        method=str(ev_props.get("Method", "ANY")).upper(),
                        path=str(ev_props.get("Path", "/")),
                        function=name,
                        auth=str(auth.get("Authorizer", "")).upper() != "NONE",
                    )
                )
            elif ev.get("Type") in ("EventBridgeRule", "CloudWatchEvent"):
                bus_ref = ev_props.get("EventBusName")
                bus = "default"
                if (ref := _ref_name(bus_ref)) and ref in tpl.buses:
                    bus = tpl.bus_name(ref)
                elif isinstance(bus_ref, str):
                    bus = bus_ref
                retry = ev_props.get("RetryPolicy") or {}
                attempts = retry.get("MaximumRetryAttempts", 2)
                tpl.rules.append(
                    RuleDef(
                        name=f"{name}.{ev_props.get('RuleName', 'rule')}",
                        function=name,
                        bus=bus,
                        pattern=dict(ev_props.get("Pattern") or {}),
                        retries=min(int(attempts), 5) if isinstance(attempts, int) else 2,
                    )
                )

            elif ev.get("Type") == "DynamoDB":
                tpl.streams.append(_stream_source(tpl, name, ev_name, ev_props))
            elif ev.get("Type") in ("Schedule", "ScheduleV2"):
                tpl.schedules.append(ScheduleDef(name, str(ev_props.get("ScheduleExpression", ""))))
            elif ev.get("Type") == "SQS":
                queue = _getatt_resource(ev_props.get("Queue"))
                if queue is None or queue not in tpl.queues:
                    raise ValueError(f"{name}.{ev_name}: Queue must be !GetAtt <a queue of the template>.Arn")
                batch = ev_props.get("BatchSize", 10)
                tpl.queue_sources.append(
                    QueueSourceDef(f"{name}.{ev_name}", name, queue, batch if isinstance(batch, int) else 10)
                )

    # rules of their own (AWS::Events::Rule) whose targets are queues of the template
    for name, props in tpl.resources_of("AWS::Events::Rule").items():
        bus_ref = props.get("EventBusName")
        bus = (
            tpl.bus_name(ref)
            if (ref := _ref_name(bus_ref)) and ref in tpl.buses
            else str(bus_ref or "default")
        )
        for target in props.get("Targets") or []:
            queue = _getatt_resource(target.get("Arn")) if isinstance(target, dict) else None
            if queue in tpl.queues:
                pattern = dict(props.get("EventPattern") or {})
                tpl.rules.append(
                    RuleDef(name=name, function="", bus=bus, pattern=pattern, retries=2, queue=queue)
                )

    tpl.authorizer = _find_authorizer(tpl)
    tpl.cors = _find_cors(tpl)
    tpl.throttle = _find_throttle(tpl)
    return tpl


def _stream_source(tpl: Template, function: str, event: str, props: dict[str, Any]) -> StreamSourceDef:
    table = _getatt_resource(props.get("Stream"))
    if table is None or table not in tpl.tables:
        raise ValueError(f"{function}.{event}: Stream must be !GetAtt <a table of the template>.StreamArn")
    patterns = []
    for flt in ((props.get("FilterCriteria") or {}).get("Filters")) or []:
        raw = flt.get("Pattern") if isinstance(flt, dict) else None
        pattern = json.loads(raw) if isinstance(raw, str) else raw
        if not isinstance(pattern, dict):
            raise ValueError(f"{function}.{event}: a filter's Pattern must be a JSON object")
        patterns.append(pattern)

    def whole(value: Any, default: int) -> int:
        return int(value) if isinstance(value, int) else default

    return StreamSourceDef(
        name=f"{function}.{event}",
        function=function,
        table=table,
        batch_size=whole(props.get("BatchSize"), 100),
        filters=tuple(patterns),
        retries=whole(props.get("MaximumRetryAttempts"), -1),
        max_age=whole(props.get("MaximumRecordAgeInSeconds"), -1),
    )


def _number(tpl: Template, value: Any, env_name: str) -> float | None:
    """A number, or a Ref to a Number parameter (the process environment may override it)."""
    if os.environ.get(env_name):
        value = os.environ[env_name]
    ref = _ref_name(value)
    if ref is not None:
        param = tpl.parameters.get(ref)
        value = param.get("Default") if isinstance(param, dict) else None
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _find_throttle(tpl: Template) -> ThrottleDef | None:
    for props in tpl.resources_of("AWS::Serverless::HttpApi").values():
        settings = props.get("DefaultRouteSettings") or {}
        rate = _number(tpl, settings.get("ThrottlingRateLimit"), "THROTTLING_RATE_LIMIT")
        burst = _number(tpl, settings.get("ThrottlingBurstLimit"), "THROTTLING_BURST_LIMIT")
        if rate is not None and burst is not None and rate > 0 and burst > 0:
            return ThrottleDef(rate=rate, burst=int(burst))
    return None


def _str_list(tpl: Template, value: Any, env_name: str | None = None) -> tuple[str, ...]:
    """A list of strings, a comma-delimited string, or a Ref to a (CommaDelimitedList) parameter."""
    if env_name and os.environ.get(env_name):
        value = os.environ[env_name]
    ref = _ref_name(value)
    if ref is not None:
        param = tpl.parameters.get(ref)
        value = param.get("Default", "") if isinstance(param, dict) else ""
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, list):
        return tuple(str(v) for v in value if isinstance(v, (str, int)))
    return ()


def _find_cors(tpl: Template) -> CorsDef | None:
    apis = tpl.resources_of("AWS::Serverless::HttpApi")
    glob_api = ((tpl.raw.get("Globals") or {}).get("HttpApi")) or {}
    for props in [*apis.values(), glob_api]:
        conf = props.get("CorsConfiguration")
        if not conf:
            continue
        if conf is True:
            conf = {"AllowOrigins": ["*"], "AllowHeaders": ["*"], "AllowMethods": ["*"]}
        max_age = conf.get("MaxAge")
        return CorsDef(
            allow_origins=_str_list(tpl, conf.get("AllowOrigins"), "CORS_ALLOW_ORIGINS"),
            allow_headers=_str_list(tpl, conf.get("AllowHeaders")),
            allow_methods=_str_list(tpl, conf.get("AllowMethods")),
            expose_headers=_str_list(tpl, conf.get("ExposeHeaders")),
            max_age=max_age if isinstance(max_age, int) else None,
            allow_credentials=conf.get("AllowCredentials") is True,
        )
    return None


def _find_authorizer(tpl: Template) -> AuthorizerDef | None:
    apis = tpl.resources_of("AWS::Serverless::HttpApi")
    glob_api = ((tpl.raw.get("Globals") or {}).get("HttpApi")) or {}
    for props in [*apis.values(), glob_api]:
        auth = props.get("Auth") or {}
        default = auth.get("DefaultAuthorizer")
        authorizers = auth.get("Authorizers") or {}
        if not default or default not in authorizers:
            continue
        conf = authorizers[default] or {}
        fn = _getatt_resource(tpl.chosen(conf.get("FunctionArn")))
        if fn is None or fn not in tpl.functions:
            raise ValueError(f"authorizer {default} does not point at a function of the template")
        headers = ((conf.get("Identity") or {}).get("Headers")) or ["Authorization"]
        return AuthorizerDef(name=str(default), function=fn, identity_headers=tuple(map(str, headers)))
    return None


# --- environment -----------------------------------------------------------------------------------

_SUB_VAR = re.compile(r"\$\{([^}!][^}]*)\}")


def resolve_environment(
    tpl: Template,
    env: dict[str, Any],
    resources: dict[str, str],
    pseudo: dict[str, str],
    process_env: dict[str, str] | os._Environ[str] | None = None,
) -> dict[str, str]:
    """Resolve a function's environment to plain strings.

    `resources` maps logical ids (tables, bus, key, functions) to their local names/ids; Refs to
    Parameters take the process environment's value of the same variable when set, else the
    parameter's Default; plain strings may be overridden by the process environment too.
    """
    proc = os.environ if process_env is None else process_env
    out: dict[str, str] = {}
    for name, value in env.items():
        ref = _ref_name(value)
        if ref is not None and ref in resources:
            out[name] = resources[ref]
            continue
        if name in proc and proc[name] != "":
            out[name] = proc[name]
            continue
        resolved = _resolve_value(tpl, value, resources, pseudo)
        if resolved is not None:
            out[name] = resolved
    return out


def _resolve_value(
    tpl: Template, value: Any, resources: dict[str, str], pseudo: dict[str, str]
) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    ref = _ref_name(value)
    if ref is not None:
        if ref in resources:
            return resources[ref]
        if ref in pseudo:
            return pseudo[ref]
        param = tpl.parameters.get(ref)
        if isinstance(param, dict) and "Default" in param:
            return _resolve_value(tpl, param["Default"], resources, pseudo)
        return None
    if isinstance(value, dict) and "Fn::Sub" in value:
        sub = value["Fn::Sub"]
        text, extra = (sub[0], sub[1]) if isinstance(sub, list) else (sub, {})

        def repl(match: re.Match[str]) -> str:
            key = match.group(1)
            if key in extra:
                return _resolve_value(tpl, extra[key], resources, pseudo) or ""
            return _resolve_value(tpl, {"Ref": key.split(".", 1)[0]}, resources, pseudo) or ""

        return _SUB_VAR.sub(repl, str(text))
    return None
