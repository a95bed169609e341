"""SnapStart's runtime hooks (synapse.http.snapstart), with Lambda's `snapshot_restore_py` faked: what is
warmed before the snapshot, and what no restored container may share."""

from __future__ import annotations

import importlib
import importlib.util
import json
import random
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from synapse.aws import clients as aws
from synapse.core import state
from synapse.core.config import settings
from synapse.http import snapstart
from synapse.services.account import providers
from synapse.store import db

Hook = Callable[[], None]


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[Hook]]]:
    """Lambda's snapshot_restore_py, recording the hooks registered with it."""
    hooks: dict[str, list[Hook]] = {"before": [], "after": []}
    fake = types.ModuleType("snapshot_restore_py")
    fake.register_before_snapshot = hooks["before"].append  # type: ignore[attr-defined]
    fake.register_after_restore = hooks["after"].append  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", fake)
    monkeypatch.setattr(snapstart, "_registered", False)
    state.reset()
    yield hooks
    state.reset()


def as_function(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv("LAMBDA_TASK_ROOT", f"/var/task/{name}")  # (Lambda's is /var/task)
    monkeypatch.setenv("_HANDLER", "app.handler")


def test_off_lambda_registering_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given no snapshot_restore_py (tests, the local run)
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", None)
    monkeypatch.setattr(snapstart, "_registered", False)
    # Then nothing is registered
    assert snapstart.register() is False


def test_on_lambda_both_hooks_are_registered_once(runtime: dict[str, list[Hook]]) -> None:
    assert snapstart.register() is True
    assert snapstart.register() is True
    assert runtime["before"] == [snapstart.before_snapshot]
    assert runtime["after"] == [snapstart.after_restore]


def test_every_function_registers_the_hooks_at_import() -> None:
    # the entrypoint module (every HTTP function), the authorizer and the summarizer call register()
    from tests.unit.test_cold_imports import ROOT

    for path in (ROOT / "functions").glob("*/app.py"):
        text = path.read_text()
        assert "from synapse.http.entrypoint import entrypoint" in text or "snapstart.register()" in text, (
            path
        )
    assert "snapstart.register()" in (ROOT / "layers/common/python/synapse/http/entrypoint.py").read_text()


def test_the_docs_function_is_named_from_its_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAMBDA_TASK_ROOT", "/var/task")
    monkeypatch.setenv("_HANDLER", "docs/app.handler")
    assert snapstart.function_name() == "docs"
    as_function(monkeypatch, "memory_get")
    assert snapstart.function_name() == "memory_get"


def test_before_the_snapshot_the_lazy_imports_and_the_service_models_are_loaded_without_credentials(
    runtime: dict[str, list[Hook]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the recall function
    as_function(monkeypatch, "memory_recall")
    imported: list[str] = []
    real_import = importlib.import_module
    monkeypatch.setattr(
        importlib, "import_module", lambda name, *a: imported.append(name) or real_import(name, *a)
    )
    asked: list[str] = []
    session = aws.session()
    monkeypatch.setattr(session, "get_credentials", lambda: asked.append("credentials"))
    loaded: list[str] = []
    create = session.create_client

    def spy(service: str, *args: Any, **kwargs: Any) -> Any:
        loaded.append(service)
        return create(service, *args, **kwargs)

    monkeypatch.setattr(session, "create_client", spy)
    # When Lambda runs the hook before the snapshot
    snapstart.register()
    runtime["before"][0]()
    # Then the function's lazy imports are made, DynamoDB's client was built once
    assert set(snapstart.WARM["memory_recall"]) <= set(imported)
    assert {"synapse.ai.embeddings", "synapse.search.scoring", "google.genai"} <= set(sys.modules)
    assert loaded == ["dynamodb", "kms"]  # (a user's own Gemini key is decrypted with KMS)
    # and no credentials were resolved, no client is cached for the requests to use
    assert asked == []
    assert db.client.cache_info().currsize == 0  # type: ignore[attr-defined]


def test_before_the_snapshot_every_module_behind_the_facades_is_imported() -> None:
    # Given a fresh interpreter as the health function (which touches neither store nor models at init)
    code = (
        "import json, sys; from synapse.http import snapstart; "
        "before = {m for m in sys.modules if m.startswith(('synapse.store.', 'synapse.core.models.'))}; "
        "snapstart.before_snapshot(); "
        "after = {m for m in sys.modules if m.startswith(('synapse.store.', 'synapse.core.models.'))}; "
        "print(json.dumps([sorted(before), sorted(after)]))"
    )
    layer = Path(snapstart.__file__).parents[2]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(layer), "LAMBDA_TASK_ROOT": "/var/task/health"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    before, after = json.loads(proc.stdout.strip().splitlines()[-1])
    # When the hook runs, then every store and models module is loaded into the snapshot
    modules = {f"synapse.store.{p.stem}" for p in (layer / "synapse" / "store").glob("[!_]*.py")}
    modules |= {
        f"synapse.core.models.{p.stem}" for p in (layer / "synapse" / "core" / "models").glob("[!_]*.py")
    }
    assert not modules <= set(before)
    assert modules <= set(after)


def test_functions_without_aws_calls_build_no_client(
    runtime: dict[str, list[Hook]], monkeypatch: pytest.MonkeyPatch
) -> None:
    as_function(monkeypatch, "health")
    snapstart.before_snapshot()
    assert aws.session.cache_info().currsize == 0  # type: ignore[attr-defined]


def test_after_a_restore_random_is_reseeded_and_only_the_session_and_settings_survive(
    runtime: dict[str, list[Hook]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a container warmed before its snapshot, with values a request would have cached
    as_function(monkeypatch, "memory_get")
    snapstart.before_snapshot()
    session, config = aws.session(), settings()
    client = db.client()
    providers._cache[("alice", "digest")] = "plain"
    random.seed(7)
    snapshot_state = random.getstate()
    # When Lambda restores the snapshot
    snapstart.register()
    runtime["after"][0]()
    # Then random draws another sequence than the snapshot's
    assert random.getstate() != snapshot_state
    # and the session and the settings are kept, every other cache is forgotten
    assert aws.session() is session
    assert settings() is config
    assert db.client() is not client
    assert not providers._cache


def test_the_warm_up_tables_name_real_functions_and_modules() -> None:
    from tests.unit.test_cold_imports import ROOT

    names = {p.parent.name for p in (ROOT / "functions").glob("*/app.py")}
    assert set(snapstart.WARM) <= names
    assert set(snapstart.SERVICES) <= names
    for modules in snapstart.WARM.values():
        for module in modules:
            assert importlib.util.find_spec(module) is not None, module
