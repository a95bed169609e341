"""GET /openapi.json and GET /docs — the merged OpenAPI document of every function, and Swagger UI.

This function is packaged with the whole functions/ folder so Powertools' OpenAPI merge can read
each function's resolver.
"""

from pathlib import Path
from typing import Any

from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import finish_openapi, merge, responses
from synapse.http.resolver import resolver

_FUNCTIONS = Path(__file__).resolve().parent.parent
_TITLE = "Synapse — long-term memory for LLM agents"
# a plain dict: the merge copies it into the document as is
_BEARER: dict[str, Any] = {
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "A user's JWT, or an agent's API key (gts_live_…)",
    }
}

app = resolver()
merge(
    app,
    _FUNCTIONS,
    own=Path(__file__).resolve().parent.name,
    title=_TITLE,
    version="1.0.0",
    security_schemes=_BEARER,  # type: ignore[arg-type]
    security=[{"bearer": []}],
    on_conflict="first",
)
app.enable_swagger(path="/docs", title=_TITLE, security_schemes=_BEARER, security=[{"bearer": []}])  # type: ignore[arg-type]


_PUBLIC_ERRORS: dict[str, Any] = {
    str(status): {
        "description": answer["description"],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}},
        **({"headers": answer["headers"]} if "headers" in answer else {}),
    }
    for status, answer in responses("public", params=False).items()
    if status >= 400
}

# This function's own two routes: the merge reads every other function, not this one.
_OWN_PATHS: dict[str, Any] = {
    "/openapi.json": {
        "get": {
            "summary": "This OpenAPI document",
            "tags": ["service"],
            "operationId": "openapi_document_get",
            "security": [],
            "responses": {
                "200": {
                    "description": "The merged OpenAPI 3 document of every route",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
                **_PUBLIC_ERRORS,
            },
        }
    },
    "/docs": {
        "get": {
            "summary": "Swagger UI over this document",
            "tags": ["service"],
            "operationId": "swagger_ui_get",
            "security": [],
            "responses": {
                "200": {"description": "HTML", "content": {"text/html": {"schema": {"type": "string"}}}},
                **_PUBLIC_ERRORS,
            },
        }
    },
}
_document: dict[str, Any] | None = None


@app.get("/openapi.json", summary="The OpenAPI document", tags=["service"], include_in_schema=False)
def openapi() -> dict[str, Any]:
    global _document  # built once per container: the merge imports every function
    if _document is None:
        merged = app.get_openapi_merge_schema()
        _document = finish_openapi({**merged, "paths": {**merged.get("paths", {}), **_OWN_PATHS}})
    return _document


handler = entrypoint(app, public=True)
