"""An SDK ``MCPServer`` (high level) with a tool, a prompt, a resource and instructions.

Run as a script (stdio). ``calls_log`` (argv[1], optional) records every tool call.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

CALLS = sys.argv[1] if len(sys.argv) > 1 else None

app = MCPServer("sdk-high", instructions="Use add for sums.")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    if CALLS:
        with open(CALLS, "a", encoding="utf-8") as handle:
            handle.write(f"add {a} {b}\n")
    return a + b


@app.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


@app.resource("memo://readme", mime_type="text/plain")
def readme() -> str:
    """The read-me."""
    return "read me"


if __name__ == "__main__":
    app.run()
