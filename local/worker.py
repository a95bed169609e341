"""One Lambda "container" of the local run: a process that loads one function and runs one invocation at
a time, as Lambda's runtime does.

`python -m local.worker <fd>` is started by `local.functions` with the function's environment. It talks
to its parent over the socket `<fd>` (multiprocessing's length-prefixed frames), never over stdout, so
whatever the handler prints or logs stays a log line:

    parent → worker   {"file", "attr", "code_dir", "paths", "name", "memory", "timeout"}   (once)
    worker → parent   {"ready": true}  or  {"ready": false, "errorType", "errorMessage", "stackTrace"}
    parent → worker   {"event": ..., "requestId": "..."}                                     (each invocation)
    worker → parent   b"R" + the result as Lambda's runtime serialises it
                      b"E" + {"errorMessage", "errorType", "requestId", "stackTrace"}

The worker exits when its parent closes the socket (also when the parent dies: the socket closes with
it). It ignores SIGINT: Ctrl-C in a terminal reaches the whole process group, and the server decides
when its workers stop.

Only the standard library is imported here, so a cold start costs the interpreter and the handler's own
imports, as on Lambda.
"""

from __future__ import annotations

import decimal
import importlib.util
import json
import math
import signal
import sys
import time
import traceback
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

RESULT = b"R"
ERROR = b"E"

REGION = "us-east-1"
ACCOUNT_ID = "123456789012"


class LambdaContext:
    """What the Lambda runtime passes as `context`."""

    def __init__(self, function_name: str, memory_mb: int, timeout_s: int, request_id: str | None = None):
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{function_name}"
        self.memory_limit_in_mb = memory_mb
        self.aws_request_id = request_id or str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = f"{datetime.now(UTC):%Y/%m/%d}/[$LATEST]{uuid.uuid4().hex}"
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


# --- Lambda's serialisation ------------------------------------------------------------------------


class LambdaEncoder(json.JSONEncoder):
    """The python3.13 runtime's encoder: non-ASCII kept, NaN allowed, a Decimal written as a float."""

    def __init__(self) -> None:
        super().__init__(ensure_ascii=False, allow_nan=True)

    def default(self, o: Any) -> Any:
        if isinstance(o, decimal.Decimal):
            return math.nan if o.is_nan() else float(o)
        return super().default(o)


def to_json(value: Any) -> str:
    """A handler's return value as Lambda's runtime sends it back (and `sam local invoke` prints it)."""
    return LambdaEncoder().encode(value)


def error_payload(exc: BaseException, request_id: str | None) -> dict[str, Any]:
    """The runtime's answer for an unhandled exception."""
    return {
        "errorMessage": str(exc),
        "errorType": type(exc).__name__,
        "requestId": request_id or "",
        "stackTrace": traceback.format_list(traceback.extract_tb(exc.__traceback__)),
    }


# --- loading ---------------------------------------------------------------------------------------


def load_handler(spec: dict[str, Any]) -> Callable[[Any, Any], Any]:
    """Import the function's module under a name of its own; return its handler."""
    for entry in [str(spec["code_dir"]), str(Path(spec["file"]).parent), *map(str, spec.get("paths", []))]:
        if entry not in sys.path:
            sys.path.append(entry)
    name = f"synapse_local_fn_{spec['name']}"
    module_spec = importlib.util.spec_from_file_location(name, spec["file"])
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"cannot load {spec['file']}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    handler = getattr(module, str(spec["attr"]))
    if not callable(handler):
        raise TypeError(f"{spec['name']}: {spec['attr']} is not callable")
    return handler  # type: ignore[no-any-return]


def _log_error(exc: BaseException) -> None:
    # as Lambda's runtime logs an unhandled exception (the caller only ever gets a 500)
    print(f"[ERROR] {type(exc).__name__}: {exc}", file=sys.stderr)
    traceback.print_exception(exc, file=sys.stderr)
    sys.stderr.flush()


def serve(conn: Connection) -> int:
    spec = json.loads(conn.recv_bytes())
    try:
        handler = load_handler(spec)
    except BaseException as exc:  # noqa: BLE001 - an init error is reported; this container is gone
        _log_error(exc)
        conn.send_bytes(json.dumps({"ready": False, **error_payload(exc, None)}).encode())
        return 1
    conn.send_bytes(b'{"ready": true}')
    while True:
        try:
            message = json.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return 0
        request_id = message.get("requestId") or str(uuid.uuid4())
        context = LambdaContext(spec["name"], int(spec["memory"]), int(spec["timeout"]), request_id)
        try:
            result = handler(message["event"], context)
            answer = RESULT + to_json(result).encode("utf-8")
        except Exception as exc:  # noqa: BLE001 - the runtime reports any error of the handler
            _log_error(exc)
            answer = ERROR + json.dumps(error_payload(exc, request_id)).encode()
        finally:
            sys.stdout.flush()
        try:
            conn.send_bytes(answer)
        except OSError:
            return 0  # the parent is gone


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = Connection(int(args[0]))
    try:
        return serve(conn)
    except (EOFError, OSError):
        return 0
    finally:
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
