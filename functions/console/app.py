"""GET /console and GET /console/{asset} — the memory console: one page and its script, style and icon
(public: the page holds no data; it signs in with a user's JWT and calls the API from the browser).

The files sit beside this module (static/) and are served as they are: no build step. Every answer
carries a strict Content-Security-Policy: nothing but this origin, no inline script or style, and
Trusted Types, so the page cannot turn text into HTML even by mistake.
"""

import hashlib
from functools import cache
from pathlib import Path
from typing import Any

from aws_lambda_powertools.event_handler import Response

from synapse.core.errors import NotFound
from synapse.http.entrypoint import entrypoint
from synapse.http.resolver import resolver

_STATIC = Path(__file__).resolve().parent / "static"
# the page and what it loads: nothing else is served (no directory listing, no path walking)
_FILES = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "icon.svg": "image/svg+xml",
}
CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "font-src 'self'",
        "connect-src 'self'",  # the API is this same origin
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
    )
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
    # revalidated on every load (an ETag answers 304), so a deployment is seen at once
    "Cache-Control": "no-cache",
}

app = resolver()


@cache
def _file(name: str) -> tuple[bytes, str]:
    body = (_STATIC / name).read_bytes()
    return body, '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def _serve(name: str) -> Response[Any]:
    body, etag = _file(name)
    headers = {**SECURITY_HEADERS, "ETag": etag}
    if etag in (app.current_event.headers.get("if-none-match") or ""):
        return Response(status_code=304, headers=headers, body="")
    return Response(status_code=200, content_type=_FILES[name], headers=headers, body=body.decode("utf-8"))


# Not in the OpenAPI document: a page for people, not an operation for API clients.
@app.get("/console", include_in_schema=False)
def page() -> Response[Any]:
    return _serve("index.html")


@app.get("/console/<asset>", include_in_schema=False)
def asset(asset: str) -> Response[Any]:
    if asset not in _FILES or asset == "index.html":
        raise NotFound("No such file in the console.")
    return _serve(asset)


handler = entrypoint(app, public=True)
