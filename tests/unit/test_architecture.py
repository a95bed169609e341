"""The package's import rules (docs/architecture.md), checked on the source: a layer imports only
layers below it, services never import the HTTP layer, and only `store` knows the table's keys."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers" / "common" / "python" / "synapse"

# lowest first; a module may import its own layer and the layers below
LAYERS = {
    "foundation": {"errors", "lazy", "models", "state", "config", "observability", "principal"},
    "adapters": {
        "aws",
        "store",
        "embeddings",
        "embeddings_local",
        "llm",
        "llm_rules",
        "ranking",
        "events",
        "secrets",
    },
    "services": {
        "auth",
        "minds",
        "identity",
        "providers",
        "memories",
        "recall",
        "context",
        "ingest",
        "sessions",
        "privacy",
    },
    "http": {"api", "mcp_tools", "snapstart"},
}
RANK = {module: i for i, layer in enumerate(LAYERS.values()) for module in layer}
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


def test_every_module_has_a_layer() -> None:
    assert {top(m) for m in modules() if m != "synapse"} == set(RANK)


@pytest.mark.parametrize("module", sorted(m for m in modules() if m != "synapse"))
def test_a_module_imports_only_its_own_layer_and_the_layers_below(module: str) -> None:
    upward = {d for d in imports(modules()[module]) if RANK[top(d)] > RANK[top(module)]}
    assert not upward, f"{module} imports {upward} from a higher layer"


def test_no_service_imports_the_http_layer() -> None:
    importers = {m for m, path in modules().items() if "api" in {top(d) for d in imports(path)}}
    assert importers <= {"api", "mcp_tools"}


def test_the_principal_depends_on_nothing_of_the_store() -> None:
    seen, todo = set(), ["principal"]
    while todo:
        module = todo.pop()
        seen.add(module)
        todo += [d for d in imports(modules()[module]) if d in modules() and d not in seen]
    assert not {top(m) for m in seen} & {"store", "aws"}


def test_only_the_store_knows_keys_and_attribute_values() -> None:
    for module, path in modules().items():
        if top(module) == "store":
            continue
        # (aws: botocore's response parser, which reads the wire format of every attribute value)
        # the store's inner modules (keys, codecs, the client) are its own: others use its facade
        inner = {d for d in imports(path) if d.startswith("store.")}
        assert not inner, f"{module} imports {inner}"
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert not node.value.startswith(KEY_PREFIXES), f"{module} spells a key: {node.value!r}"
            # item["sk"]["S"], {"S": ...}: an attribute value read or built by hand
            named = [node.slice] if isinstance(node, ast.Subscript) else []
            named += [k for k in node.keys if k is not None] if isinstance(node, ast.Dict) else []
            spelled = {n.value for n in named if isinstance(n, ast.Constant)}
            if module != "aws":
                assert not spelled & {"S", "N", "BOOL", "B", "L", "M", "SS", "NS"}, (
                    f"{module} reads attributes"
                )


def test_the_models_are_imported_through_their_facade() -> None:
    # synapse.models serves each name from its domain's module on first use; a direct import of
    # an inner module would bypass it (and cannot be told from a facade import in the other checks)
    for module, path in modules().items():
        if top(module) == "models":
            continue
        inner = {d for d in imports(path) if d.startswith("models.")}
        assert not inner, f"{module} imports {inner}"


def test_benchmarks_do_not_import_the_tests() -> None:
    for path in (ROOT / "bench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("tests"), f"{path} imports {node.module}"
