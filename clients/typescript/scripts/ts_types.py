"""The TypeScript client's types, generated from the service's own OpenAPI document.

    .venv/bin/python clients/typescript/scripts/ts_types.py            # regenerate src/schema.d.ts
    .venv/bin/python clients/typescript/scripts/ts_types.py --check    # exit 1 if it is out of date
    .venv/bin/python clients/typescript/scripts/ts_types.py --url http://127.0.0.1:3000   # from a server
    .venv/bin/python clients/typescript/scripts/ts_types.py --print-document            # the document only

The document is the one `GET /openapi.json` serves: the docs function (functions/docs/app.py, which
merges every function's schema) run once through the local run's own harness (`python -m local.invoke
DocsFunction events/docs.json`, as `make invoke` runs it) on a throw-away DATA_DIR, so no server and no
network are needed. The types come from openapi-typescript (version pinned in deno.json), run by the
Deno binary of the `deno` package on PyPI, with DENO_DIR=.deno/ at the repository's root.
`make ts-types` runs this; tests/e2e/test_typescript_clients.py checks the committed file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
CLIENT = ROOT / "clients" / "typescript"
SCHEMA = CLIENT / "src" / "schema.d.ts"
DENO_DIR = ROOT / ".deno"
# Fields with a default are optional (they may be left out of a request body); see the README.
GENERATOR_ARGS = ["--default-non-nullable", "false"]


def deno_bin() -> str:
    """The Deno binary of the `deno` package (pyproject's dev group), else `deno` on PATH."""
    try:
        import deno  # type: ignore[import-not-found, unused-ignore]

        return str(deno.find_deno_bin())
    except (ImportError, FileNotFoundError, AttributeError):
        local = Path(sys.executable).parent / "deno"
        return str(local) if local.exists() else "deno"


def deno_env() -> dict[str, str]:
    return {**os.environ, "DENO_DIR": str(DENO_DIR), "DENO_NO_UPDATE_CHECK": "1", "NO_COLOR": "1"}


def served_document() -> dict[str, Any]:
    """GET /openapi.json's document, from the docs function run once as the local run runs it."""
    with tempfile.TemporaryDirectory(prefix="synapse-openapi-") as data_dir:
        proc = subprocess.run(  # noqa: S603 - our own interpreter and module
            [
                sys.executable,
                "-m",
                "local.invoke",
                "--template",
                str(ROOT / "template.yaml"),
                "--data-dir",
                data_dir,
                "DocsFunction",
                str(ROOT / "events" / "docs.json"),
            ],
            cwd=ROOT,
            capture_output=True,
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"local.invoke DocsFunction failed:\n{proc.stderr.decode(errors='replace')}")
    answer = json.loads(proc.stdout)
    if answer.get("statusCode") != 200:
        raise RuntimeError(f"the docs function answered {answer.get('statusCode')}: {answer.get('body')}")
    document: dict[str, Any] = json.loads(answer["body"])
    return document


def fetched_document(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url.rstrip('/')}/openapi.json", timeout=30) as resp:  # noqa: S310
        document: dict[str, Any] = json.loads(resp.read())
    return document


def generate(document: dict[str, Any], out: Path) -> None:
    """openapi-typescript over the document, into `out` (its own formatting, byte for byte)."""
    with tempfile.TemporaryDirectory(prefix="synapse-ts-types-") as tmp:
        source = Path(tmp) / "openapi.json"
        source.write_text(json.dumps(document, ensure_ascii=False, indent=2), encoding="utf-8")
        proc = subprocess.run(  # noqa: S603 - the pinned generator, through deno.json's task
            [deno_bin(), "task", "--quiet", "types", str(source), "-o", str(out), *GENERATOR_ARGS],
            cwd=CLIENT,
            env=deno_env(),
            capture_output=True,
            check=False,
        )
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(
            f"openapi-typescript failed ({proc.returncode}):\n{proc.stdout.decode(errors='replace')}"
            f"\n{proc.stderr.decode(errors='replace')}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the committed file only")
    parser.add_argument("--url", help="read GET <url>/openapi.json instead of running the docs function")
    parser.add_argument("--print-document", action="store_true", help="print the document and stop")
    args = parser.parse_args(argv)
    document = fetched_document(args.url) if args.url else served_document()
    if args.print_document:
        print(json.dumps(document, ensure_ascii=False, indent=2))
        return 0
    if not args.check:
        generate(document, SCHEMA)
        print(f"wrote {SCHEMA.relative_to(ROOT)}", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory(prefix="synapse-ts-check-") as tmp:
        fresh = Path(tmp) / "schema.d.ts"
        generate(document, fresh)
        if fresh.read_bytes() != SCHEMA.read_bytes():
            print(f"{SCHEMA.relative_to(ROOT)} is out of date: run `make ts-types`", file=sys.stderr)
            return 1
    print(f"{SCHEMA.relative_to(ROOT)} is up to date", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
