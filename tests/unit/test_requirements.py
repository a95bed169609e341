"""The Lambda layer installs exactly what pyproject.toml's runtime dependency group pins."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _layer_requirements() -> list[str]:
    lines = (ROOT / "layers/common/requirements.txt").read_text(encoding="utf-8").splitlines()
    return [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()]


def _runtime_group() -> list[str]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        pyproject = tomllib.load(f)
    group = pyproject["dependency-groups"]["runtime"]
    assert all(isinstance(item, str) for item in group), "the runtime group must not include other groups"
    return [str(item).strip() for item in group]


def test_layer_requirements_equal_the_runtime_group() -> None:
    # Given the layer's requirements.txt and pyproject.toml's runtime group
    layer = _layer_requirements()
    runtime = _runtime_group()
    # When both are compared as sets of requirement lines
    missing_from_layer = sorted(set(runtime) - set(layer))
    extra_in_layer = sorted(set(layer) - set(runtime))
    # Then they hold the same packages with the same pins
    assert not missing_from_layer and not extra_in_layer, (
        f"layers/common/requirements.txt differs from [dependency-groups] runtime: "
        f"missing {missing_from_layer}, extra {extra_in_layer}"
    )
    assert len(layer) == len(set(layer)), "duplicate lines in layers/common/requirements.txt"


def test_every_runtime_requirement_is_pinned() -> None:
    # Given the runtime group
    runtime = _runtime_group()
    # When each requirement is inspected
    unpinned = [req for req in runtime if "==" not in req]
    # Then every one is pinned, so the deployed layer is reproducible
    assert not unpinned, f"unpinned runtime requirements: {unpinned}"
