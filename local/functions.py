"""Lambda functions in-process: a pool of "containers" per function, each its own module instance.

A Lambda container handles one request at a time and Powertools resolvers keep per-request state on
the module-level `app`, so each concurrent request gets a separately loaded copy of the handler
module, like Lambda scaling out; idle copies are reused (warm starts).
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


class FunctionPool:
    def __init__(self, fn: Function, max_containers: int = 8) -> None:
        self.fn = fn
        self.max_containers = max_containers
        self._idle: list[Callable[[Any, Any], Any]] = []
        self._count = 0
        self._cond = threading.Condition()

    @property
    def containers(self) -> int:
        return self._count

    def _acquire(self) -> Callable[[Any, Any], Any]:
        with self._cond:
            while True:
                if self._idle:
                    return self._idle.pop()
                if self._count < self.max_containers:
                    self._count += 1
                    break
                self._cond.wait()
        try:
            return load_handler(self.fn)  # a cold start, outside the lock
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise

    def _release(self, handler: Callable[[Any, Any], Any]) -> None:
        with self._cond:
            self._idle.append(handler)
            self._cond.notify()

    def invoke(self, event: dict[str, Any], request_id: str | None = None) -> Any:
        handler = self._acquire()
        try:
            ctx = LambdaContext(self.fn.logical_id, self.fn.memory, self.fn.timeout, request_id)
            return handler(event, ctx)
        finally:
            self._release(handler)

    def warm(self) -> None:
        """Load one container ahead of the first request (import errors show at start)."""
        self._release(self._acquire())


class Functions:
    def __init__(self, functions: dict[str, Function], max_containers: int = 8) -> None:
        self.pools = {name: FunctionPool(fn, max_containers) for name, fn in functions.items()}

    def invoke(self, name: str, event: dict[str, Any], request_id: str | None = None) -> Any:
        return self.pools[name].invoke(event, request_id)
