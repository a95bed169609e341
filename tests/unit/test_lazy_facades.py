"""`synapse.store` and `synapse.core.models` import their modules on first use (`synapse.core.lazy`): the names
a type checker sees (the `TYPE_CHECKING` imports) are the names served at run time, each is the
submodule's own object, and a function imports only the domains it touches."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from synapse import store
from synapse.core import lazy, models

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "common" / "python"
FACADES = [store, models]


def _type_checking_imports(package: ModuleType) -> dict[str, tuple[str, str]]:
    """{name: (submodule, attribute)} of the `if TYPE_CHECKING:` block of the package's __init__."""
    tree = ast.parse(Path(inspect.getfile(package)).read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    out: dict[str, tuple[str, str]] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module
        prefix, _, module = node.module.rpartition(".")
        assert prefix == package.__name__
        for alias in node.names:
            out[alias.asname or alias.name] = (module, alias.name)
    return out


@pytest.mark.parametrize("package", FACADES, ids=lambda p: p.__name__)
def test_the_names_a_type_checker_sees_are_the_names_served(package: ModuleType) -> None:
    served = lazy.parse(package._EXPORTS)
    assert served == _type_checking_imports(package)
    assert sorted(package.__all__) == sorted(served)
    for name, (module, attr) in served.items():
        assert getattr(package, name) is getattr(
            importlib.import_module(f"{package.__name__}.{module}"), attr
        )
    assert set(served) <= set(dir(package))


def test_every_public_name_of_the_models_modules_is_served() -> None:
    served = lazy.parse(models._EXPORTS)
    for path in sorted((LAYER / "synapse" / "models").glob("[!_]*.py")):
        module = importlib.import_module(f"synapse.core.models.{path.stem}")
        own = {
            name
            for name, value in vars(module).items()
            if not name.startswith("_")
            and not isinstance(value, ModuleType)
            and getattr(value, "__module__", module.__name__) == module.__name__
            and name not in {"TYPE_CHECKING"}
        }
        # constants and type aliases have no __module__ of their own: those imported from another
        # module of the package are that module's, so only names defined here are checked
        defined = {n for n in own if n in _assigned_or_defined(path)}
        missing = sorted(n for n in defined if served.get(n, ("", ""))[0] != path.stem)
        assert not missing, f"{path.name} defines names synapse.core.models does not serve: {missing}"


def _assigned_or_defined(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def test_an_unknown_name_is_an_attribute_error_and_submodules_still_import() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        store.nothing_here  # noqa: B018
    from synapse.store import changes, codec

    assert changes.__name__ == "synapse.store.changes" and codec.__name__ == "synapse.store.codec"


_PROBE = """
import importlib.util, json, sys
sys.path[:0] = [sys.argv[2], sys.argv[3]]
spec = importlib.util.spec_from_file_location("app", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(json.dumps(sorted(m for m in sys.modules if m.startswith("synapse."))))
"""


def _imported_by(function: str) -> set[str]:
    fn = ROOT / "functions" / function
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, str(fn / "app.py"), str(fn), str(LAYER)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "POWERTOOLS_TRACE_DISABLED": "true", "AWS_DEFAULT_REGION": "us-east-1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_a_function_imports_only_the_domains_it_touches() -> None:
    # Given GET /memory/{id}, which reads one memory: none of the key, provider, conversation or chat code
    loaded = _imported_by("memory_get")
    assert "synapse.core.models.memory" in loaded
    assert not loaded & {
        "synapse.core.models.chat",
        "synapse.core.models.account",
        "synapse.store.credentials",
        "synapse.store.conversations",
        "synapse.store.users",
    }
    # and GET /keys: no memory models, no conversations
    loaded = _imported_by("keys_list")
    assert "synapse.core.models.account" in loaded
    assert not loaded & {"synapse.core.models.chat", "synapse.store.conversations"}
