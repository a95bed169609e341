"""The HTTP edge: resolver, envelope, OpenAPI, body checks, the entrypoint, MCP, SnapStart."""
