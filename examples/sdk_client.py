"""Connect the MCP Python SDK's client to a server behind toolpin and handle a block.

    python examples/sdk_client.py

When toolpin blocks a session, the SDK raises its ``MCPError`` (code -31042, or -31043 when
toolpin could not verify) wrapped in anyio ``ExceptionGroup``s; ``mcp_error`` finds it.
"""

from __future__ import annotations

import asyncio
import sys

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

DRIFT = -31042  # the definitions changed since you approved them
UNVERIFIED = -31043  # toolpin could not verify the server (it never saw a clean listing)


def mcp_error(exc: BaseException) -> MCPError | None:
    """The ``MCPError`` inside the SDK's (nested) exception groups, if there is one."""
    if isinstance(exc, MCPError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        if (found := mcp_error(inner)) is not None:
            return found
    return None


async def main() -> int:
    server = [sys.executable, "-m", "toolpin.demo.server"]
    params = StdioServerParameters(command="toolpin", args=["run", "--name", "demo", *server])
    try:
        async with Client(params) as client:
            tools = await client.list_tools()
            print("tools:", ", ".join(tool.name for tool in tools.tools))
    except Exception as exc:
        error = mcp_error(exc)
        if error is None or error.error.code not in (DRIFT, UNVERIFIED):
            raise
        print(f"blocked by toolpin ({error.error.code}): {error.error.message}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
