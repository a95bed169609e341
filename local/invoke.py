"""`make invoke FUNCTION=<logical id> EVENT=events/<file>.json`: one function, once, as `sam local invoke`
runs it, without Docker.

    .venv/bin/python -m local.invoke MemoryCreateFunction events/memory_create.json
    .venv/bin/python -m local.invoke SummarizeSessionFunction - < events/summarize_session.json

The handler runs in a fresh worker process (a cold start, like a new container) with the event as it
is: its `requestContext.authorizer` as given, no authorizer run, no API Gateway in front. Its answer is
printed on stdout exactly as `sam local invoke` prints it: the JSON Lambda's python3.13 runtime makes
of the handler's return value (or its error object), and nothing else, not even a newline. Logs (the
handler's, and START / END / REPORT lines) go to stderr.

The data is the local run's (DATA_DIR):
- when a local server is running on DATA_DIR, the function talks to that server's embedded AWS, so it
  sees the server's data, and what it writes is journaled by the server and served by it at once
  (events it publishes are delivered by the server);
- otherwise this command takes DATA_DIR's lock, replays the journal into an embedded moto of its own,
  journals the function's writes the same way, delivers the events it publishes to their targets, and
  releases DATA_DIR when it is done.

Exit status 0 when the function ran, whatever it answered (as `sam local invoke`); 2 for a wrong
function or event; 1 when the local run could not start.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import socket
import sys
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from local.functions import FunctionError, Functions, WorkerCrashed
from local.template import Template, parse
from local.worker import to_json

log = logging.getLogger("local.invoke")


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m local.invoke",
        description="Run one function once with an event, like sam local invoke.",
    )
    parser.add_argument(
        "function", help="the function's logical id in the template, e.g. MemoryCreateFunction"
    )
    parser.add_argument(
        "event", help="the event's JSON file (e.g. events/memory_create.json), or - for stdin"
    )
    parser.add_argument("--template", default="template.yaml")
    parser.add_argument("--data-dir", default=os.environ.get("DATA_DIR") or ".local")
    return parser.parse_args(argv)


def _running_server(data_dir: Path) -> dict[str, Any] | None:
    """local.json of a server that holds DATA_DIR and whose embedded AWS answers, else None."""
    import fcntl

    lock = data_dir / ".lock"
    if not lock.exists():
        return None
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pass  # held: a server (or another invoke) is using DATA_DIR
    else:
        return None  # nobody holds it (closing the fd below releases it)
    finally:
        os.close(fd)
    try:
        info = json.loads((data_dir / "local.json").read_text(encoding="utf-8"))
        endpoint = urlsplit(str(info["aws_endpoint"]))
        with socket.create_connection((endpoint.hostname or "127.0.0.1", endpoint.port or 80), timeout=2):
            pass
    except (OSError, ValueError, KeyError, TypeError):
        return None  # it is starting or stopping: wait for DATA_DIR like a server would
    return dict(info)


class Session:
    """Where the function runs: against a running server's AWS, or a local run of its own."""

    def __init__(self, template_path: Path, data_dir: Path) -> None:
        self.template_path = template_path.resolve()
        self.data_dir = data_dir.resolve()
        self.runtime: Any = None
        self.functions: Functions | None = None
        self.template: Template | None = None
        self.mode = ""

    def __enter__(self) -> Session:
        server = _running_server(self.data_dir)
        if server is not None:
            self._attach(server)
        else:
            self._own()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.runtime is not None:
            self.runtime.stop()
        elif self.functions is not None:
            self.functions.close()

    def _attach(self, server: dict[str, Any]) -> None:
        from local.aws import point_boto_at
        from local.runtime import LOCAL_DEFAULTS, function_environments, use_dev_secret

        tpl = self.template = parse(self.template_path)
        env = dict(os.environ)
        use_dev_secret(env, self.data_dir)
        for name, value in LOCAL_DEFAULTS.items():
            env.setdefault(name, value)
        point_boto_at(str(server["aws_endpoint"]), env)
        resources = {str(k): str(v) for k, v in (server.get("resources") or {}).items()}
        envs = function_environments(tpl, resources, env)
        layer = self.template_path.parent / "layers" / "common" / "python"
        self.functions = Functions(tpl.functions, envs, 1, [layer], stdout=sys.stderr.fileno())
        self.mode = f"the running local server's data (pid {server.get('pid')}, {server['aws_endpoint']})"

    def _own(self) -> None:
        from local.runtime import LocalRuntime

        self.runtime = LocalRuntime(
            self.template_path, self.data_dir, concurrency=1, worker_stdout=sys.stderr.fileno()
        )
        self.runtime.start_headless(compact=False)
        self.template, self.functions = self.runtime.template, self.runtime.functions
        self.mode = f"{self.data_dir} (its journal replayed; no server is running on it)"

    def invoke(self, function: str, event: Any, request_id: str) -> tuple[bytes, float, float]:
        """(payload, init ms, duration ms): the payload as Lambda's runtime makes it, error or not."""
        assert self.functions is not None
        try:
            answer = self.functions.invoke_raw(function, event, request_id)
        except FunctionError as exc:  # the module failed to load: Lambda's init error
            return to_json({**exc.payload, "requestId": request_id}).encode(), 0.0, 0.0
        except WorkerCrashed as exc:
            payload = {
                "errorType": "Runtime.ExitError",
                "errorMessage": f"RequestId: {request_id} Error: Runtime exited without answering ({exc})",
            }
            return to_json(payload).encode(), 0.0, 0.0
        return answer.payload, answer.init_ms, answer.duration_ms


def _read_event(name: str) -> Any:
    text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    return json.loads(text) if text.strip() else {}


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    level = getattr(logging, os.environ.get("LOCAL_LOG_LEVEL", "WARNING").upper(), logging.WARNING)
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    for noisy in ("botocore", "urllib3", "werkzeug"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    err = sys.stderr
    try:
        tpl = parse(Path(args.template))
    except (OSError, ValueError) as exc:
        print(f"error: cannot read the template {args.template}: {exc}", file=err)
        return 2
    fn = tpl.functions.get(args.function)
    if fn is None:
        print(f"error: no function {args.function!r} in {args.template}; one of:", file=err)
        print("  " + "\n  ".join(sorted(tpl.functions)), file=err)
        return 2
    try:
        event = _read_event(args.event)
    except (OSError, ValueError) as exc:
        print(f"error: cannot read the event {args.event}: {exc}", file=err)
        return 2

    from local.runtime import StartError

    os.environ["DATA_DIR"] = args.data_dir
    request_id = str(uuid.uuid4())
    try:
        with Session(Path(args.template), Path(args.data_dir)) as session:
            handler = f"{fn.file.relative_to(fn.code_dir).with_suffix('').as_posix()}.{fn.attr}"
            print(f"Invoking {handler} ({args.function}) against {session.mode}", file=err)
            print(f"START RequestId: {request_id} Version: $LATEST", file=err, flush=True)
            payload, init_ms, duration_ms = session.invoke(args.function, event, request_id)
            sys.stdout.buffer.write(payload)
            sys.stdout.flush()
            print(f"\nEND RequestId: {request_id}", file=err, flush=True)
    except StartError as exc:
        print(f"error: {exc}", file=err)
        return 1
    used_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024  # the worker, now it is gone
    print(
        f"REPORT RequestId: {request_id}\tInit Duration: {init_ms:.2f} ms\tDuration: {duration_ms:.2f} ms\t"
        f"Billed Duration: {max(1, round(duration_ms))} ms\tMemory Size: {fn.memory} MB\t"
        f"Max Memory Used: {used_mb} MB",
        file=err,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
