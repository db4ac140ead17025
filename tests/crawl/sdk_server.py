"""An MCP SDK (``MCPServer``) server for the crawler tests.

``python sdk_server.py [stdio]``: serve over stdio. The same ``build()`` is used in-process
for the Streamable HTTP tests (``streamable_http_app()`` under uvicorn).
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer


def build(name: str = "sdk-demo", instructions: str = "Use add for sums.") -> MCPServer:
    server: MCPServer = MCPServer(name, instructions=instructions, version="2.0.0")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def echo(text: str) -> str:
        """Repeat the text."""
        return text

    @server.prompt()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello {name}"

    return server


if __name__ == "__main__":
    build().run("stdio" if len(sys.argv) < 2 else sys.argv[1])  # type: ignore[call-overload]
