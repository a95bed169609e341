"""A package facade whose re-exports are imported on first use (PEP 562).

`store` re-exports every item family's functions; importing them all at init cost each function's cold
start the modules it never calls (a function that reads memories has no use for API keys or session
summaries). With `exports`, `store.save` imports `synapse.store.memories` the first time it is read
and keeps it in the package's namespace, so later reads are plain attribute lookups.

Type checkers cannot see through a module `__getattr__`, so each facade also imports its names under
`TYPE_CHECKING`; tests/unit/test_lazy_facades.py checks that both lists agree.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def parse(table: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """{submodule: "name other=attr …"} → {exported name: (submodule, attribute)}."""
    out: dict[str, tuple[str, str]] = {}
    for module, names in table.items():
        for entry in names.split():
            name, _, attr = entry.partition("=")
            out[name] = (module, attr or name)
    return out


def exports(
    package: str, table: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The package's `__getattr__` and `__dir__` for the names in `table` (see `parse`)."""
    names = parse(table)

    def __getattr__(name: str) -> object:
        try:
            module, attr = names[name]
        except KeyError:
            # AttributeError, not KeyError: `from package import submodule` relies on it to fall back
            # to importing the submodule
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(f"{package}.{module}"), attr)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
