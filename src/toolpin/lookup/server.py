"""The MCP server of ``toolpin lookup``, on the SDK's low-level ``Server``.

Both protocol eras are served by the SDK (``initialize`` and 2026-07-28
``server/discover``). Tool definitions come from :mod:`toolpin.lookup.tools` (our own
text only) with an ``outputSchema`` each, and every result carries ``structuredContent``
plus its text rendering. The answers run in a worker thread: reading and verifying the
log is blocking file and network I/O.

Over Streamable HTTP (:func:`serve_http`) the server listens on 127.0.0.1 unless told
otherwise, offers the log tools only (never the pin store of the machine it runs on),
refuses a ``Host`` or ``Origin`` that is not this server's own (the SDK's
``TransportSecuritySettings``: 421 and 403), refuses bodies over :data:`MAX_BODY_BYTES`
(413) and sends no CORS headers, so a web page of another origin cannot read an answer.
"""

from __future__ import annotations

import logging
import socket
from typing import Any, Final

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError

from toolpin import __version__
from toolpin.lookup.tools import INSTRUCTIONS, Lookup, ToolInputError, ToolSpec
from toolpin.lookup.vocab import VocabularyError, check_closed, render

MAX_BODY_BYTES: Final = 64 * 1024
"""The largest HTTP request body (a tools/call of 2,000 definition hashes fits)."""
LOOPBACK: Final = "127.0.0.1"


def _tool(spec: ToolSpec, lookup: Lookup) -> types.Tool:
    open_world = spec.uses_log and lookup.open_world()
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema,
        output_schema=spec.output_schema,
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=open_world,
        ),
    )


def _error(text: str) -> types.CallToolResult:
    check_closed({"summary": text})
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def build_server(lookup: Lookup) -> Server[Any]:
    """The SDK server answering with ``lookup``."""
    tools = [_tool(spec, lookup) for spec in lookup.specs()]
    names = {t.name for t in tools}

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in names:
            raise MCPError(code=types.INVALID_PARAMS, message="unknown tool")
        arguments = params.arguments
        try:
            answer = await anyio.to_thread.run_sync(lookup.call, params.name, arguments)
        except ToolInputError as exc:
            return _error(str(exc))
        except VocabularyError:
            logging.getLogger(__name__).error(
                "an answer of %s failed the vocabulary check", params.name
            )
            return _error("toolpin lookup could not build a safe answer")
        text = render(answer)
        check_closed({"summary": text})
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=answer,
        )

    return Server(
        "toolpin-lookup",
        version=__version__,
        title="toolpin lookup",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(lookup: Lookup) -> None:
    """Serve on stdin/stdout until the client closes them."""
    from mcp.server.stdio import stdio_server

    server = build_server(lookup)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def security_settings(host: str, port: int) -> TransportSecuritySettings:
    """Only this server's own ``Host`` values, and only its own origin for ``Origin``."""
    names = [host] if host not in (LOOPBACK, "localhost") else [LOOPBACK, "localhost"]
    hosts = [f"{name}:{port}" for name in names]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{h}" for h in hosts],
    )


def http_app(lookup: Lookup, host: str, port: int) -> Any:
    """The Starlette app of the HTTP transport (log tools only)."""
    if lookup.local:
        raise ValueError("the HTTP transport never serves the local pin store")
    server = build_server(lookup)
    return server.streamable_http_app(
        host=host,
        transport_security=security_settings(host, port),
        max_request_body_size=MAX_BODY_BYTES,
        json_response=True,
    )


class VisibleText(logging.Filter):
    """Make control, bidi and zero-width characters visible in a log line: the SDK's
    transport security logs the refused ``Host`` and ``Origin`` values, which a client
    chose, to this server's stderr."""

    def filter(self, record: logging.LogRecord) -> bool:
        from toolpin.core.render import visible

        record.msg = visible(record.getMessage())
        record.args = ()
        return True


SDK_REQUEST_LOGGERS: Final = ("mcp.server.transport_security", "mcp.server.streamable_http")


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (``OSError`` when the address is in use)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


async def serve_http(lookup: Lookup, sock: socket.socket, host: str = LOOPBACK) -> None:
    """Serve Streamable HTTP at ``http://host:port/mcp`` on ``sock`` until cancelled.

    ``host`` is the name clients use: only ``Host: host:port`` is accepted (both loopback
    names when it is a loopback name).
    """
    import uvicorn

    port = sock.getsockname()[1]
    for name in SDK_REQUEST_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, VisibleText) for f in logger.filters):
            logger.addFilter(VisibleText())
    app = http_app(lookup, host, port)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])
