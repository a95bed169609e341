"""What Lambda installs is exactly what pyproject.toml pins: the layer is the runtime dependency group,
the MCP function's own requirements.txt is the mcp group."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# requirements file (what sam build installs) -> its dependency group in pyproject.toml
PAIRS = [("layers/common/requirements.txt", "runtime"), ("functions/mcp/requirements.txt", "mcp")]


def _requirements(path: str) -> list[str]:
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    return [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()]


def _group(name: str) -> list[str]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        pyproject = tomllib.load(f)
    group = pyproject["dependency-groups"][name]
    assert all(isinstance(item, str) for item in group), f"the {name} group must not include other groups"
    return [str(item).strip() for item in group]


@pytest.mark.parametrize(("path", "group"), PAIRS)
def test_requirements_equal_their_group(path: str, group: str) -> None:
    # Given a requirements.txt that sam build installs and its dependency group
    installed = _requirements(path)
    pinned = _group(group)
    # When both are compared as sets of requirement lines
    missing = sorted(set(pinned) - set(installed))
    extra = sorted(set(installed) - set(pinned))
    # Then they hold the same packages with the same pins
    assert not missing and not extra, (
        f"{path} differs from [dependency-groups] {group}: missing {missing}, extra {extra}"
    )
    assert len(installed) == len(set(installed)), f"duplicate lines in {path}"


@pytest.mark.parametrize("group", [g for _, g in PAIRS])
def test_every_deployed_requirement_is_pinned(group: str) -> None:
    # Given a group that is deployed to Lambda
    # When each requirement is inspected
    unpinned = [req for req in _group(group) if "==" not in req]
    # Then every one is pinned, so what is deployed is reproducible
    assert not unpinned, f"unpinned {group} requirements: {unpinned}"
