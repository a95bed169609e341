"""GET /console and its assets, through the function's handler: content types, the strict
Content-Security-Policy, nothing loaded from outside the deployment, text rendered as text."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from harness.lambdas import ROOT, LambdaContext, load_function, sample_event

STATIC = ROOT / "functions" / "console" / "static"
ASSETS = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "icon.svg": "image/svg+xml",
}
# the one URL allowed in the assets: the SVG namespace (a name, never fetched)
NAMESPACES = {"http://www.w3.org/2000/svg"}


@pytest.fixture(scope="module")
def console() -> Any:
    return load_function("console")


def get(console: Any, path: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    event = copy.deepcopy(sample_event("console"))
    event["rawPath"] = path
    event["requestContext"]["http"]["path"] = path
    if path != "/console":
        event["routeKey"] = event["requestContext"]["routeKey"] = "GET /console/{asset}"
        event["pathParameters"] = {"asset": path.rsplit("/", 1)[1]}
    event["headers"].update(headers or {})
    result: dict[str, Any] = console.handler(event, LambdaContext())
    return result


def header(result: dict[str, Any], name: str) -> str:
    found = {k.lower(): v for k, v in (result.get("headers") or {}).items()}
    return str(found.get(name.lower(), ""))


def directives(csp: str) -> dict[str, list[str]]:
    out = {}
    for part in csp.split(";"):
        words = part.split()
        if words:
            out[words[0]] = words[1:]
    return out


def test_the_page_is_html_with_a_strict_content_security_policy(console: Any) -> None:
    # Given the console function
    # When the page is asked for, with no token at all
    result = get(console, "/console")
    # Then it is the HTML page
    assert result["statusCode"] == 200
    assert header(result, "Content-Type") == "text/html; charset=utf-8"
    assert "<title>Synapse console</title>" in result["body"]
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in result["body"]
    # And its policy allows this origin only: no inline script or style, no framing, Trusted Types on
    csp = directives(header(result, "Content-Security-Policy"))
    assert csp["default-src"] == ["'self'"]
    assert csp["script-src"] == ["'self'"]
    assert csp["style-src"] == ["'self'"]
    assert csp["connect-src"] == ["'self'"]
    assert csp["object-src"] == ["'none'"]
    assert csp["frame-ancestors"] == ["'none'"]
    assert csp["base-uri"] == ["'none'"]
    assert csp["require-trusted-types-for"] == ["'script'"]
    assert not any("unsafe" in v or "*" in v or ":" in v for values in csp.values() for v in values)
    assert header(result, "X-Content-Type-Options") == "nosniff"
    assert header(result, "Referrer-Policy") == "no-referrer"


@pytest.mark.parametrize("name", sorted(ASSETS))
def test_each_asset_has_its_type_and_the_same_policy(console: Any, name: str) -> None:
    result = get(console, f"/console/{name}")
    assert result["statusCode"] == 200
    assert header(result, "Content-Type") == ASSETS[name]
    assert result["body"] == (STATIC / name).read_text(encoding="utf-8")
    assert "default-src 'self'" in header(result, "Content-Security-Policy")
    assert header(result, "ETag")


def test_an_unchanged_asset_is_answered_304(console: Any) -> None:
    etag = header(get(console, "/console/app.js"), "ETag")
    again = get(console, "/console/app.js", {"if-none-match": etag})
    assert again["statusCode"] == 304 and not again["body"]


@pytest.mark.parametrize("name", ["index.html", "app.py", "..", "secrets.json", "%2e%2e%2fapp.py"])
def test_nothing_else_is_served(console: Any, name: str) -> None:
    result = get(console, f"/console/{name}")
    assert result["statusCode"] == 404
    assert header(result, "Content-Type") == "application/json; charset=utf-8"
    assert '"code":"not_found"' in result["body"]


def test_the_page_loads_only_files_of_its_own(console: Any) -> None:
    html = get(console, "/console")["body"]
    # no inline script, no inline style: both would be refused by the policy
    assert re.findall(r"<script\b[^>]*>", html) == ['<script type="module" src="/console/app.js">']
    assert "<style" not in html and " style=" not in html
    assert re.findall(r'(?:src|href)="([^"]+)"', html) == [
        "/console/icon.svg",
        "/console/app.css",
        "/console/app.js",
        "/console/icon.svg",
    ]


@pytest.mark.parametrize("path", sorted(STATIC.iterdir()), ids=lambda p: p.name)
def test_no_asset_names_anything_outside_the_deployment(path: Path) -> None:
    # Given every file the console serves
    text = path.read_text(encoding="utf-8")
    # Then it names no other origin: no CDN, no web font, no analytics
    urls = set(re.findall(r"(?:https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,}[^\s\"')]*", text))
    assert urls <= NAMESPACES, urls
    assert "@import" not in text and "@font-face" not in text


def test_the_script_never_turns_data_into_html() -> None:
    js = (STATIC / "app.js").read_text(encoding="utf-8")
    code = "\n".join(line for line in js.splitlines() if not line.lstrip().startswith("//"))
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in code, sink
    # and the token is never logged or put in a URL
    assert "console.log" not in code
    assert "?token" not in code and "&token" not in code


def test_the_style_covers_thai() -> None:
    css = (STATIC / "app.css").read_text(encoding="utf-8")
    for font in ('"Noto Sans Thai"', '"Sarabun"', '"Leelawadee UI"', '"Thonburi"', "sans-serif"):
        assert font in css, font
    assert "overflow-wrap: anywhere" in css
