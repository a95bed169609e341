"""Lambda functions in-process: one container per function, and one invocation at a time.

Each function's handler module is loaded once under a unique name (a cold start on first use, warm
after). Invocations are serialised across all functions because Powertools assumes one request per
process: `APIGatewayHttpResolver.resolve` keeps the current event on the `BaseRouter` *class*, and the
shared Logger and Metrics keep per-request keys and metric sets too. Two handlers running at once in
one process would read each other's request (CI caught an ingest processed with another client's
body). Lambda gets this isolation from separate processes; here a lock gives it.
"""

from __future__ import annotations

import importlib.util
import itertools
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from local.apigw import LambdaContext
from local.template import Function

log = logging.getLogger("local.functions")

_counter = itertools.count(1)
_path_lock = threading.Lock()


def add_to_path(*dirs: Path) -> None:
    with _path_lock:
        for d in dirs:
            entry = str(d)
            if entry not in sys.path:
                sys.path.append(entry)


def load_handler(fn: Function) -> Callable[[Any, Any], Any]:
    """Load a fresh instance of the function's module under a unique name; return its handler."""
    add_to_path(fn.code_dir, fn.file.parent)
    name = f"synapse_local_fn_{fn.logical_id}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, fn.file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {fn.file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    handler = getattr(module, fn.attr)
    if not callable(handler):
        raise TypeError(f"{fn.logical_id}: {fn.attr} is not callable")
    return handler  # type: ignore[no-any-return]


class Container:
    """One function's container: loaded on first use, reused after."""

    def __init__(self, fn: Function) -> None:
        self.fn = fn
        self._handler: Callable[[Any, Any], Any] | None = None

    def warm(self) -> Callable[[Any, Any], Any]:
        """Load the handler if it is not yet (the cold start); import errors show here."""
        if self._handler is None:
            self._handler = load_handler(self.fn)
        return self._handler

    def invoke(self, event: dict[str, Any], request_id: str | None = None) -> Any:
        handler = self.warm()
        ctx = LambdaContext(self.fn.logical_id, self.fn.memory, self.fn.timeout, request_id)
        return handler(event, ctx)


class Functions:
    def __init__(self, functions: dict[str, Function]) -> None:
        self.pools = {name: Container(fn) for name, fn in functions.items()}
        self._one_at_a_time = threading.Lock()

    def invoke(self, name: str, event: dict[str, Any], request_id: str | None = None) -> Any:
        with self._one_at_a_time:
            return self.pools[name].invoke(event, request_id)
