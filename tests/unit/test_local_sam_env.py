"""local/sam-env.json, the --env-vars file for `sam local invoke`: it matches the template, holds no secret."""

from __future__ import annotations

import json
from pathlib import Path

from local.template import load_yaml

ROOT = Path(__file__).resolve().parents[2]
SECRETS = ("JWT_SECRET", "GEMINI_API_KEY")


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    raw = load_yaml(ROOT / "template.yaml")
    glob = set((raw["Globals"]["Function"].get("Environment") or {}).get("Variables") or {})
    own = {
        name: set(((res["Properties"].get("Environment") or {}).get("Variables")) or {})
        for name, res in raw["Resources"].items()
        if res.get("Type") == "AWS::Serverless::Function"
    }
    return glob, own


def test_the_env_vars_file_names_only_variables_the_template_declares() -> None:
    # sam local invoke only overrides variables a function declares: anything else would be ignored
    env = json.loads((ROOT / "local" / "sam-env.json").read_text(encoding="utf-8"))
    glob, own = _declared()
    assert set(env["Parameters"]) == glob  # every Globals variable, and only those
    functions = {k: v for k, v in env.items() if k != "Parameters"}
    assert set(functions) <= set(own), set(functions) - set(own)  # logical ids of the template
    for name, variables in functions.items():
        assert set(variables) <= own[name] | glob, (name, set(variables) - own[name] - glob)
    # every function with variables of its own is listed, with each of them
    assert {n for n, v in own.items() if v} == set(functions)
    assert all(set(functions[n]) == own[n] for n in functions)


def test_the_env_vars_file_holds_no_secret_and_values_are_strings() -> None:
    env = json.loads((ROOT / "local" / "sam-env.json").read_text(encoding="utf-8"))
    for variables in env.values():
        for name, value in variables.items():
            assert isinstance(value, str), name
            if name in SECRETS:
                assert value == "", f"{name} must stay empty in a committed file"
    assert env["Parameters"]["LOCAL_EMBEDDER"] == "none"  # the layer has no local embedder
