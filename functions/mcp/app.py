"""POST /mcp — the memory tools for agents (remember, recall, search, forget, context) over the Model
Context Protocol's Streamable HTTP transport: stateless, JSON answers, behind the same authorizer."""

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.request import Request

from synapse.core.models.chat import McpAnswer, McpMessage
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import no_content, responses
from synapse.http.resolver import resolver

app = resolver()

DESCRIPTION = """The [Model Context Protocol](https://modelcontextprotocol.io) for agents: point an MCP
host's Streamable HTTP transport here with `Authorization: Bearer <API key or JWT>` (and `X-Mind-Id`
to choose a mind). Stateless: no `Mcp-Session-Id`, no GET stream; every request is answered with JSON.

The body is one JSON-RPC 2.0 message: `initialize`, `tools/list`, `tools/call` (tools `remember`,
`recall`, `search`, `forget`, `context`), or a notification (answered 202 without a body). A tool that
fails (validation, not found, a scope the key lacks: a `memory:read` key may call `recall`, `search` and
`context` only) is a `result` with `isError: true`. A bad or missing token is 401 before any MCP
message is read."""


@app.post(
    "/mcp",
    summary="MCP (Model Context Protocol), Streamable HTTP",
    description=DESCRIPTION,
    tags=["mcp"],
    responses=responses(
        "any",
        {
            200: {
                "description": "The JSON-RPC response to the request (a protocol error: a JSON-RPC `error`)",
                "content": {"application/json": {"model": McpAnswer}},
            },
            202: no_content("Accepted: the message was a notification"),
        },
        body=True,
        bad_request="an MCP-Protocol-Version this server does not speak (MCP answers it with 400)",
    ),
)
def mcp(
    message: McpMessage, request: Request, who: Caller, mind: InMind
) -> Response[Any]:  # the SDK's JSON, as it wrote it
    # (an unknown X-Mind-Id is 404 before any tool runs: `mind` is resolved before this call)
    # the SDK (~0.7 s of imports) is loaded by this function only, on its first request
    from synapse.http import mcp as mcp_tools

    status, headers, body = mcp_tools.serve(request.resolved_event.raw_event, app.lambda_context, who, mind)
    return Response(status_code=status, headers=headers, body=body or None)


handler = entrypoint(app)
