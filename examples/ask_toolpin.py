"""Ask ``toolpin lookup`` one question the way an AI app does: the MCP Python SDK's client
starts the server, calls one tool and prints its structured answer.

    python examples/ask_toolpin.py TOOL '{"arg": "value"}' -- toolpin lookup --log DIR --vkey FILE
"""

from __future__ import annotations

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters


async def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    tool, arguments, command = argv[0], json.loads(argv[1]), argv[3:]
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(params) as client:
        result = await client.call_tool(tool, arguments)
    print(json.dumps(result.structured_content, indent=2, ensure_ascii=True))
    return 1 if result.is_error else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
