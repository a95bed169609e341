"""The embedded AWS: moto's server on loopback, the template's tables, bus and key, hooks and TTL."""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import threading
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import boto3
import botocore.session
from botocore.exceptions import ClientError

from local.apigw import ACCOUNT_ID, REGION
from local.journal import UNJOURNALED_HEADER, JournalError, MotoTap

log = logging.getLogger("local.aws")

_TABLE_PROPS = (
    "TableName",
    "AttributeDefinitions",
    "KeySchema",
    "BillingMode",
    "ProvisionedThroughput",
    "GlobalSecondaryIndexes",
    "LocalSecondaryIndexes",
    "TableClass",
)


def start_moto(tap: MotoTap | None = None, speedups: bool = True) -> tuple[Any, str]:
    """moto's server on 127.0.0.1 and a free port, one request at a time; returns (server, endpoint URL).

    moto's backends are not thread-safe: a cancelled transaction puts back a deep copy of every table
    taken when it began (undoing whatever another request wrote meanwhile, e.g. a retry of a slow
    transaction whose client timed out), and a query iterates dicts that other requests change. One
    request at a time gives the atomicity DynamoDB itself guarantees, to every process that calls it
    (the server and the functions' workers alike).

    `tap` sees each request it wants (`MotoTap.wants`) with moto's answer, inside that one lock and
    before the answer is sent: that is where the journal records the writes, in the order moto applied
    them, and where EventBridge entries are picked up. `speedups` installs local.moto_speed (moto's
    patches are process-wide: tests that start a server in their own process turn them off).
    """
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from moto.server import ThreadedMotoServer
    from werkzeug.serving import make_server

    from local import moto_speed

    if speedups:
        moto_speed.install()  # a cold recall of a large partition in seconds, not minutes

    class SerialMotoServer(ThreadedMotoServer):
        def _server_entry(self) -> None:  # ThreadedMotoServer's, with the app behind one lock
            app = DomainDispatcherApplication(create_backend_app)
            lock = threading.Lock()

            def serial(environ: Any, start_response: Any) -> Any:
                target = str(environ.get("HTTP_X_AMZ_TARGET") or "")
                if tap is None or not tap.wants(target) or environ.get(_UNJOURNALED_ENVIRON):
                    with lock:
                        return list(app(environ, start_response))
                return _tapped(app, lock, tap, target, environ, start_response)

            self._server = make_server(
                self._ip_address, self._port, serial, True, request_handler=MotoRequestHandler
            )
            self._server_ready_event.set()
            self._server.serve_forever()

    server = SerialMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, f"http://{host}:{port}"


_UNJOURNALED_ENVIRON = "HTTP_" + UNJOURNALED_HEADER.upper().replace("-", "_")


def _tapped(
    app: Any, lock: threading.Lock, tap: MotoTap, target: str, environ: Any, start_response: Any
) -> list[bytes]:
    """Run one request through moto with the tap watching; the answer leaves only after the tap."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length > 0 else b""
    environ["wsgi.input"] = io.BytesIO(body)
    seen: dict[str, Any] = {}
    written: list[bytes] = []

    def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        seen["status"], seen["headers"] = status, headers
        return written.append

    with lock:
        chunks = [*written, *app(environ, capture)]
        status = str(seen.get("status") or "500 INTERNAL SERVER ERROR")
        try:
            tap.observe(target, body, int(status.split(" ", 1)[0]), b"".join(chunks))
        except JournalError as exc:
            # moto applied it, the disk does not have it: the caller must not take it as done. A 400
            # (not a 5xx) so that botocore does not retry a write that is already in memory.
            log.error("%s; the data in memory is now ahead of the journal: restart the server", exc)
            payload = json.dumps(
                {"__type": "com.amazonaws.dynamodb.v20120810#LocalJournalFailure", "message": str(exc)}
            ).encode()
            start_response("400 BAD REQUEST", [("Content-Type", "application/x-amz-json-1.0")])
            return [payload]
    start_response(status, seen.get("headers") or [])
    return chunks


def point_boto_at(endpoint: str, env: MutableMapping[str, str] | None = None) -> None:
    """Every boto3/botocore client created from now on with this environment talks to the embedded
    endpoint (this process's environment by default; the workers get a copy of it)."""
    env = os.environ if env is None else env
    env["AWS_ENDPOINT_URL"] = endpoint
    env["AWS_ACCESS_KEY_ID"] = "testing"
    env["AWS_SECRET_ACCESS_KEY"] = "testing"
    env.pop("AWS_SESSION_TOKEN", None)
    env.pop("AWS_PROFILE", None)
    env["AWS_DEFAULT_REGION"] = REGION
    env["AWS_REGION"] = REGION


def raw_client(service: str, endpoint: str | None = None) -> Any:
    """A client whose requests the journal and the local EventBridge leave alone, whenever it is used
    (the journal's replay and compaction use one: replaying must not journal the writes again)."""
    session = botocore.session.get_session()
    client = session.create_client(
        service,
        region_name=REGION,
        endpoint_url=endpoint or os.environ.get("AWS_ENDPOINT_URL"),
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.meta.events.register("before-send", _mark_unjournaled, unique_id="synapse-local-raw")
    return client


def _mark_unjournaled(request: Any, **_: Any) -> None:
    request.headers[UNJOURNALED_HEADER] = "1"


# --- resources -------------------------------------------------------------------------------------


def create_table(client: Any, name: str, props: dict[str, Any]) -> str | None:
    """Create a table from its CloudFormation Properties; returns its TTL attribute, if any."""
    params: dict[str, Any] = {k: props[k] for k in _TABLE_PROPS if k in props and _plain(props[k])}
    params["TableName"] = name
    if "BillingMode" not in params and "ProvisionedThroughput" not in params:
        params["BillingMode"] = "PAY_PER_REQUEST"
    client.create_table(**params)
    ttl = props.get("TimeToLiveSpecification") or {}
    attr = ttl.get("AttributeName")
    if isinstance(attr, str) and ttl.get("Enabled", True) in (True, "true", "True"):
        client.update_time_to_live(
            TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": attr}
        )
        return attr
    return None


def _plain(value: Any) -> bool:
    """True when no CloudFormation intrinsic function is inside."""
    if isinstance(value, dict):
        if any(k == "Ref" or k.startswith("Fn::") for k in value):
            return False
        return all(_plain(v) for v in value.values())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return True


def create_bucket(client: Any, name: str, kms_key: str | None = None) -> str:
    """An S3 bucket as the template's: private, and encrypted by default with the local key of the
    template's key when it names one. Returns its name. (moto keeps objects in memory: they are not
    journaled, so a restart starts with an empty bucket; the snapshots in it are rebuilt on demand.)"""
    client.create_bucket(Bucket=name)
    client.put_public_access_block(
        Bucket=name,
        PublicAccessBlockConfiguration={
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        },
    )
    if kms_key:
        client.put_bucket_encryption(
            Bucket=name,
            ServerSideEncryptionConfiguration={
                "Rules": [
                    {
                        "ApplyServerSideEncryptionByDefault": {
                            "SSEAlgorithm": "aws:kms",
                            "KMSMasterKeyID": kms_key,
                        },
                        "BucketKeyEnabled": True,
                    }
                ]
            },
        )
    return name


def ensure_kms_key(client: Any, state_file: Path, description: str = "synapse local provider key") -> str:
    """A symmetric key whose id and key material survive restarts (moto's material is random per key).

    moto's server runs in this process (never in a function's worker), so its backend can be reached:
    the first run saves the new key's id and material; later runs create a key and give it back the
    saved id and material, so old ciphertexts (which name the key id) still decrypt, encryption
    context still enforced.
    """
    from moto.kms.models import kms_backends

    created = client.create_key(Description=description, KeyUsage="ENCRYPT_DECRYPT")
    new_id = created["KeyMetadata"]["KeyId"]
    backend = kms_backends[ACCOUNT_ID][REGION]
    key = backend.keys[new_id]
    if state_file.exists():
        saved = json.loads(state_file.read_text(encoding="utf-8"))
        old_id = str(saved["key_id"])
        backend.keys.pop(new_id)
        key.id = old_id
        key.arn = key.arn.replace(new_id, old_id)
        key.key_material = base64.b64decode(saved["key_material"])
        backend.keys[old_id] = key
        return old_id
    write_private(
        state_file,
        json.dumps({"key_id": new_id, "key_material": base64.b64encode(key.key_material).decode()}),
    )
    return str(new_id)


def write_private(path: Path, text: str) -> None:
    """Write a small secret file atomically, readable by the owner only, fsync'ed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


# --- TTL -------------------------------------------------------------------------------------------


def sweep_expired(client: Any, table: str, attr: str, key_names: list[str], now: float | None = None) -> int:
    """Delete items whose numeric TTL attribute is in the past (moto never does). Returns the count."""
    cutoff = int(now if now is not None else time.time())
    names = {"#t": attr, **{f"#k{i}": k for i, k in enumerate(key_names)}}
    deleted = 0
    paginator = client.get_paginator("scan")
    for page in paginator.paginate(
        TableName=table,
        FilterExpression="#t < :now",
        ProjectionExpression=", ".join(f"#k{i}" for i in range(len(key_names))),
        ExpressionAttributeNames=names,
        ExpressionAttributeValues={":now": {"N": str(cutoff)}},
    ):
        # between pages, let the functions' calls in: moto's one lock is not fair, and a sweep of a
        # large table (each page a slow moto call) would otherwise hold recalls up for seconds
        time.sleep(0.005)
        for item in page.get("Items", []):
            try:
                client.delete_item(
                    TableName=table,
                    Key={k: item[k] for k in key_names},
                    ConditionExpression="#t < :now",
                    ExpressionAttributeNames={"#t": attr},
                    ExpressionAttributeValues={":now": {"N": str(cutoff)}},
                )
                deleted += 1
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                    raise
    return deleted


class TtlSweeper:
    """At start and every `interval` seconds, delete expired items through a journaled client."""

    def __init__(self, tables: list[tuple[str, str, list[str]]], interval: float = 60.0) -> None:
        self.tables = tables
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sweep_once(self) -> int:
        client = boto3.client("dynamodb")  # not a raw client: its deletes are journaled
        total = 0
        for table, attr, keys in self.tables:
            try:
                total += sweep_expired(client, table, attr, keys)
            except Exception as exc:  # noqa: BLE001 - a failed sweep is retried next round
                log.warning("TTL sweep of %s failed: %s", table, type(exc).__name__)
        return total

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="ttl-sweeper", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            self.sweep_once()
            if self._stop.wait(self.interval):
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
