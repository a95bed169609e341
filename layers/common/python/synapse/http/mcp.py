"""POST /mcp: the memory tools for agents over the Model Context Protocol.

The official `mcp` SDK does the protocol (JSON-RPC framing, `initialize` and capability negotiation,
`tools/list`, `tools/call`) on its Streamable HTTP transport, stateless and with JSON answers; Mangum
hands it the API Gateway event as an ASGI request. Each tool calls the service its route calls, with
the caller and the mind the function resolved once for the request (`serve`), and validates its
arguments with the route's own pydantic model (whose JSON Schema is the tool's input schema).

Imported by the MCP function only, when it is first called: the SDK costs ~0.7 s of imports.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mangum import Mangum
from mcp.server import Server, ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from synapse.core.errors import InvalidJson, NotFound, SynapseError, Unauthorized, ValidationFailed
from synapse.core.models.base import Body, Scope
from synapse.core.models.chat import ContextIn, ForgetIn, RecallIn, SearchIn
from synapse.core.models.memory import MemoryIn
from synapse.core.observability import logger
from synapse.core.principal import Principal
from synapse.core.state import per_container
from synapse.http.envelope import JSON, envelope, to_json, validation_details
from synapse.services.memory import context, memories, recall
from synapse.store.minds import Mind

PATH = "/mcp"
# Requests reach this function through API Gateway, which names its own host: the SDK's DNS-rebinding
# check (a browser tricked into a local server) does not apply to a bearer-token API behind it.
_TRANSPORT = TransportSecuritySettings(enable_dns_rebinding_protection=False)
_INSTRUCTIONS = (
    "Synapse is this user's long-term memory. Call `context` (or `recall`) before answering anything "
    "that may depend on what you were told before; call `remember` when you learn something durable "
    "(a name, a preference, a decision, a project's state, a mistake to avoid), in the user's language. "
    "A memory is identified by (category, key): remembering the same key again updates it in place."
)

Outcome = tuple[str, dict[str, Any]]  # the result's text, and its structured content


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    model: type[Body]
    scope: Scope
    run: Callable[[Principal, Mind, Any], Outcome]
    description: str

    def listed(self) -> types.Tool:
        read_only = self.scope is Scope.read
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=input_schema(self.model),
            annotations=types.ToolAnnotations(
                title=self.title,
                read_only_hint=read_only,
                destructive_hint=self.name == "forget",
                idempotent_hint=read_only or self.name in ("remember", "forget"),
                open_world_hint=False,
            ),
        )


def input_schema(model: type[Body]) -> dict[str, Any]:
    """The route's model as the tool's JSON Schema, less `userId`: a tool acts for its caller."""
    schema = model.model_json_schema()
    schema["properties"].pop("userId", None)
    if "userId" in schema.get("required", []):
        schema["required"].remove("userId")
    return schema


# --- the tools: each is its route's service, and a text an LLM reads ------------------------------


def _remember(who: Principal, mind: Mind, args: MemoryIn) -> Outcome:
    memory, created = memories.put(who, mind, args)
    done = "Stored a new memory" if created else "Updated the memory"
    text = f"{done} {memory.category.value}/{memory.key} (id {memory.id}, version {memory.version})."
    return text, memory.model_dump(mode="json")


def _line(kind: str, key: str, text: str, score: float, mem_id: str) -> str:
    return f"- [{kind}/{key}] {text} (score {score:.3f}, id {mem_id})"


def _recall(who: Principal, mind: Mind, args: RecallIn) -> Outcome:
    found = recall.recall(who, mind, args)
    lines = [_line(m.type.value, m.key, m.text, m.score, m.id) for m in found.memories]
    return "\n".join(lines) or "No memories matched.", found.model_dump(mode="json")


def _search(who: Principal, mind: Mind, args: SearchIn) -> Outcome:
    hits = memories.search(mind, args.q, tag=args.tag, limit=args.limit)
    lines = [_line(m.category.value, m.key, m.content, m.score, m.id) for m in hits]
    data = {"memories": [m.model_dump(mode="json") for m in hits]}
    return "\n".join(lines) or "No memories matched.", data


def _forget(who: Principal, mind: Mind, args: ForgetIn) -> Outcome:
    memories.delete(mind, args.id)
    return f"Forgot memory {args.id} (it and its history are deleted).", {"deleted": args.id}


def _context(who: Principal, mind: Mind, args: ContextIn) -> Outcome:
    out = context.context(who, mind, args)
    return out.prompt or "Nothing is remembered for this yet.", out.model_dump(mode="json")


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool(
            name="remember",
            title="Remember a fact",
            model=MemoryIn,
            scope=Scope.write,
            run=_remember,
            description=(
                "Store one durable memory about the user or their work, to be recalled in later "
                "conversations. Use it when you learn something that will still matter later: who the "
                "user is (identity), what they like (preference), facts, the state of a project, a skill, "
                "a mistake not to repeat, context, or a note. Not for small talk or things true only now.\n"
                "Choose `key` as a short, stable snake_case name for the *slot* the fact fills "
                "(`user_name`, `home_city`, `preferred_editor`, `project_synapse_status`), not for the "
                "value: remembering the same (category, key) again updates that memory in place (the old "
                "text is kept in its history), so reuse a key to correct or refresh a fact instead of "
                "making a new one. `content` is one self-contained sentence in the user's language "
                "(Thai or English). Agents' memories are stored unverified until the user verifies them."
            ),
        ),
        Tool(
            name="recall",
            title="Recall relevant memories",
            model=RecallIn,
            scope=Scope.read,
            run=_recall,
            description=(
                "Find the memories most relevant to a question or topic (meaning and words, Thai and "
                "English), best first; one memory per line as `[category/key] text (score, id)`. Use it "
                "before answering something that may depend on what the user told you before. `limit` is "
                "1-50 (default 5); `category` and `tags` narrow the search."
            ),
        ),
        Tool(
            name="search",
            title="Search memories by words",
            model=SearchIn,
            scope=Scope.read,
            run=_search,
            description=(
                "Full-text search of the memories for exact words or names (`q`), optionally within one "
                "tag; ranked, one memory per line with its id. Prefer `recall` for questions; use `search` "
                "to find a memory to update or forget."
            ),
        ),
        Tool(
            name="forget",
            title="Forget a memory",
            model=ForgetIn,
            scope=Scope.write,
            run=_forget,
            description=(
                "Delete one memory by its id (from `recall` or `search`), with its history. Use it only "
                "when the user asks you to forget something or a memory is plainly wrong and cannot be "
                "corrected with `remember` on the same key."
            ),
        ),
        Tool(
            name="context",
            title="Context for this turn",
            model=ContextIn,
            scope=Scope.read,
            run=_context,
            description=(
                "Everything to know before answering the user's message, as one text block for your "
                "context: the user's identity line, the memories most relevant to `query` (the user's "
                "message), and, with `sessionId`, the conversation's latest summary and last messages."
            ),
        ),
    )
}


# --- the protocol's handlers -----------------------------------------------------------------------


def _failed(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


# the caller and mind of the request being served (`serve` sets them; the SDK's tasks inherit them)
_request: ContextVar[tuple[Principal, Mind] | None] = ContextVar("mcp_request", default=None)


def _caller() -> tuple[Principal, Mind]:
    found = _request.get()
    if found is None:  # (only a request `serve` did not set up)
        raise Unauthorized("A valid bearer token is required.")
    return found


def _invalid(exc: ValidationError) -> str:
    details = validation_details(exc.errors())
    loc, msg = (details[0]["loc"], str(details[0]["msg"])) if details else ([], "invalid arguments")
    return ValidationFailed.sentence(["arguments", *loc], msg)


async def _list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    # every caller sees the five tools; scopes are checked when one is called
    return types.ListToolsResult(tools=[t.listed() for t in TOOLS.values()])


async def _call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    tool = TOOLS.get(params.name)
    if tool is None:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
    try:
        who, mind = _caller()
        who.require(tool.scope)
        args = tool.model.model_validate(params.arguments or {})
        # the services are synchronous (boto3): one message per invocation, so the loop may wait
        text, data = tool.run(who, mind, args)
    except ValidationError as exc:
        return _failed(_invalid(exc))
    except SynapseError as err:
        if err.status >= 500:
            logger.warning("tool failed", extra={"tool": tool.name, "error_code": err.code})
        return _failed(err.message)
    except Exception as exc:  # noqa: BLE001  (a tool's failure is its result, never the protocol's)
        # the type only: messages and traces may carry user content or secrets
        logger.error("unhandled tool error", extra={"tool": tool.name, "error_type": type(exc).__name__})
        return _failed("Something went wrong on our side.")
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=data)


@per_container
def server() -> Server[Any]:
    return Server(
        "synapse",
        version="2.0.0",
        title="Synapse memory",
        instructions=_INSTRUCTIONS,
        on_list_tools=_list_tools,
        on_call_tool=_call_tool,
    )


# --- one HTTP request ------------------------------------------------------------------------------

_ACCEPT = "application/json, text/event-stream"
VERSION_HEADER = "mcp-protocol-version"
# every revision the SDK serves: the handshake era (initialize) and the stateless one
VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)


def serve(
    event: dict[str, Any], lambda_context: Any, who: Principal, mind: Mind
) -> tuple[int, dict[str, str], str]:
    """One POST /mcp (already authenticated, its body checked as one JSON object), for the caller and
    the mind resolved for this request: the SDK's answer as status, headers and body. Its HTTP
    errors are put in the contract's envelope, like every other route's."""
    headers = event["headers"] = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    version = headers.get(VERSION_HEADER)
    if version is not None and version not in VERSIONS:
        # the transport's rule (MCP 2025-06-18 and later): an unsupported version is 400 Bad Request;
        # the contract has one code for 400
        return _error(
            InvalidJson(
                "The MCP-Protocol-Version header names a version this server does not speak.",
                details=[{"loc": ["header", VERSION_HEADER], "msg": f"must be one of {', '.join(VERSIONS)}"}],
            )
        )
    accept = headers.get("accept", "")
    if "application/json" not in accept or "text/event-stream" not in accept:
        # the transport wants both named; the answer is JSON either way (curl, generated clients)
        headers["accept"] = _ACCEPT
    # a new ASGI app per request: the SDK's session manager runs once per instance; building it is cheap
    app = server().streamable_http_app(
        streamable_http_path=PATH, json_response=True, stateless_http=True, transport_security=_TRANSPORT
    )
    _event_loop()
    serving = _request.set((who, mind))
    try:
        answer = Mangum(app, lifespan="auto")(event, lambda_context)
    finally:
        _request.reset(serving)
    status = int(answer["statusCode"])
    body = str(answer.get("body") or "")
    if status >= 400:
        return _protocol_error(status, body)
    # the SDK's own headers but its length (API Gateway sets it); JSON in UTF-8, as every route says,
    # and no content type on an answer without a body (202)
    out = {k.lower(): str(v) for k, v in (answer.get("headers") or {}).items()}
    out.pop("content-length", None)
    out.pop("content-type", None)
    if body:
        out["content-type"] = JSON
    return status, out, body


@per_container
def _event_loop() -> asyncio.AbstractEventLoop:
    """The container's event loop, which Mangum runs each request on (made before Mangum looks)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    return loop


def _protocol_error(status: int, body: str) -> tuple[int, dict[str, str], str]:
    """The transport refused the request before any tool ran (a JSON-RPC message it cannot take):
    the envelope, with the SDK's reason as the detail (its first line: no validation dump)."""
    try:
        reason = str(json.loads(body)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        reason = "not an MCP message this endpoint takes"
    if reason.startswith("Validation error:"):  # the SDK's pydantic dump: what it says, in a clause
        reason = "not a JSON-RPC request, notification or response"
    reason = (reason.strip().splitlines() or ["not an MCP message"])[0][:300]
    err: SynapseError = (
        ValidationFailed(
            "Not an MCP message this endpoint takes.", details=[{"loc": ["body"], "msg": reason}]
        )
        if status in (400, 406, 415, 422)
        else NotFound("No such MCP session or method.")
        if status in (404, 405)
        else SynapseError("Something went wrong on our side.")
    )
    if err.status >= 500:
        logger.error("mcp transport error", extra={"status": status})
    return _error(err)


def _error(err: SynapseError) -> tuple[int, dict[str, str], str]:
    return err.status, {"content-type": JSON}, to_json(envelope(err))
