"""The package's import rules (docs/architecture.md), checked on the source: a layer imports only
layers below it, services never import the HTTP layer, and only `store` knows the table's keys."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers" / "common" / "python" / "synapse"

# the package's folders are its layers, lowest first; a module imports its own layer and the layers
# below, never above (docs/architecture.md draws the tree). Folders of one rank do not import each other.
LAYERS: dict[str, int] = {
    "core": 0,  # errors, settings, state, observability, the caller, the models
    "aws": 1,  # botocore clients and the item parser, EventBridge, KMS
    "store": 2,  # DynamoDB: the only code that builds keys or reads attribute values
    "ai": 2,  # Gemini and the offline embedders, extraction, summaries, rules
    "search": 3,  # tokenizer, BM25, vectors, fusion, the corpus and its cache
    "services": 4,  # the behaviour of the routes, by domain
    "http": 5,  # resolver, envelope, OpenAPI, body checks, entrypoint, MCP, SnapStart
}
# the service domains, in the order they may import each other (chat uses memory, memory uses account;
# review decides on what memory proposed)
DOMAINS = {"account": 0, "memory": 1, "review": 2, "chat": 3, "webhooks": 4}
MAX_MODULES = 10  # per folder (its __init__ not counted)
RANK = LAYERS
# sort-key and partition prefixes of the table: only store/keys.py spells them
KEY_PREFIXES = (
    "mem:",
    "nug:",
    "ses:",
    "msg:",
    "sum:",
    "ing:",
    "apikey:",
    "provider:",
    "key:",
    "mind:",
    "chg:",
    "snapshots/",
)


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        found[".".join(parts) or "synapse"] = path
    return found


def imports(path: Path) -> set[str]:
    """The synapse modules a file imports (`from synapse import store` counts as `store`)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("synapse"):
            if node.module == "synapse":
                out.update(a.name for a in node.names)
            else:
                out.add(node.module.removeprefix("synapse."))
        elif isinstance(node, ast.Import):
            out.update(a.name.removeprefix("synapse.") for a in node.names if a.name.startswith("synapse."))
    return out


def top(module: str) -> str:
    return module.split(".")[0]


def layer(module: str) -> str:
    return top(module)


def domain(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "services" and len(parts) > 1 else None


def test_the_top_of_the_package_holds_only_folders() -> None:
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py"]
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(LAYERS)


def test_every_module_is_in_a_layer() -> None:
    assert {layer(m) for m in modules() if m != "synapse"} == set(LAYERS)
    assert {domain(m) for m in modules() if domain(m)} == set(DOMAINS)


def test_no_folder_holds_more_than_about_ten_modules() -> None:
    for folder in [PACKAGE, *(p for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__")]:
        count = len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
        assert count <= MAX_MODULES, f"{folder.relative_to(PACKAGE)} holds {count} modules"


@pytest.mark.parametrize("module", sorted(m for m in modules() if m != "synapse"))
def test_a_module_imports_only_its_own_layer_and_the_layers_below(module: str) -> None:
    deps = imports(modules()[module])
    upward = {d for d in deps if LAYERS[layer(d)] > LAYERS[layer(module)]}
    assert not upward, f"{module} imports {upward} from a higher layer"
    sideways = {d for d in deps if layer(d) != layer(module) and LAYERS[layer(d)] == LAYERS[layer(module)]}
    assert not sideways, f"{module} imports {sideways}, a folder of its own rank"
    mine = domain(module)
    if mine is not None:
        later = {d for d in deps if domain(d) is not None and DOMAINS[domain(d) or ""] > DOMAINS[mine]}
        assert not later, f"{module} imports {later}, a service domain after its own"


def test_no_service_imports_the_http_layer() -> None:
    importers = {m for m, path in modules().items() if "http" in {layer(d) for d in imports(path)}}
    assert {layer(m) for m in importers} <= {"http"}


def test_the_mind_is_resolved_at_the_edge_only() -> None:
    # a request resolves the mind it acts in once (`http.caller.mind`); services act in the Mind
    # they are given, and never resolve one again (it read the mind's item once per service)
    resolving = set()
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            called = node.func if isinstance(node, ast.Call) else None
            named = (getattr(called, "attr", ""), getattr(getattr(called, "value", None), "id", ""))
            if named in {("resolve", "minds"), ("space_of", "minds")}:
                resolving.add(module)
    assert resolving == {"http.caller"}


def test_the_principal_depends_on_nothing_of_the_store() -> None:
    seen, todo = set(), ["core.principal"]
    while todo:
        module = todo.pop()
        seen.add(module)
        todo += [d for d in imports(modules()[module]) if d in modules() and d not in seen]
    assert not {layer(m) for m in seen} & {"store", "aws"}


def test_only_the_store_knows_keys_and_attribute_values() -> None:
    for module, path in modules().items():
        if top(module) == "store":
            continue
        # (aws.clients: botocore's response parser, which reads the wire format of every attribute value)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert not node.value.startswith(KEY_PREFIXES), f"{module} spells a key: {node.value!r}"
            # item["sk"]["S"], {"S": ...}: an attribute value read or built by hand
            named = [node.slice] if isinstance(node, ast.Subscript) else []
            named += [k for k in node.keys if k is not None] if isinstance(node, ast.Dict) else []
            spelled = {n.value for n in named if isinstance(n, ast.Constant)}
            if module != "aws.clients":
                assert not spelled & {"S", "N", "BOOL", "B", "L", "M", "SS", "NS"}, (
                    f"{module} reads attributes"
                )


def test_packages_import_nothing_at_init() -> None:
    # `from synapse.store import nuggets` loads that module (and what it imports), not every item
    # family: a package's __init__ is its docstring only
    for path in PACKAGE.rglob("__init__.py"):
        tree = ast.parse(path.read_text())
        assert not [n for n in tree.body if not isinstance(n, ast.Expr)], path.relative_to(PACKAGE)


def test_a_plain_import_loads_only_its_module() -> None:
    code = (
        "import json, sys; from synapse.store import nuggets; from synapse.core.models.memory import Memory; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('synapse.'))))"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(PACKAGE.parent)}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = set(json.loads(proc.stdout))
    assert {"synapse.store.nuggets", "synapse.core.models.memory"} <= loaded
    assert not loaded & {
        "synapse.store.account.credentials",
        "synapse.store.conversations",
        "synapse.store.account.users",
        "synapse.core.models.chat",
        "synapse.core.models.account",
    }


def top_level_imports(folder: str) -> set[tuple[str, str]]:
    """(file, top-level package) for every import in a folder of the repository."""
    out = set()
    for path in (ROOT / folder).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            out.update((str(path.relative_to(ROOT)), name.split(".")[0]) for name in names)
    return out


@pytest.mark.parametrize(
    ("folder", "forbidden"),
    [
        # the tests and the benchmarks share the doubles and the harness, not each other
        ("bench", {"tests"}),
        ("harness", {"tests", "bench"}),
        # the local run is the service's: no test tooling
        ("local", {"tests", "bench", "harness"}),
    ],
)
def test_the_repositorys_packages_import_down_only(folder: str, forbidden: set[str]) -> None:
    found = {(path, name) for path, name in top_level_imports(folder) if name in forbidden}
    assert not found, f"{folder} imports {sorted(found)}"
