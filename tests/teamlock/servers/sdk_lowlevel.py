"""An SDK low-level ``Server`` (stdio) that serves 7 tools in pages of 3, plus 2 prompts.

``sdk_lowlevel.py [SUFFIX [RECORD]]``: SUFFIX is appended to the last tool's description;
RECORD is a file that gets one line per tools/list request with the cursor it carried.
"""

from __future__ import annotations

import sys

import anyio
from mcp import stdio_server, types
from mcp.server.lowlevel import Server

SUFFIX = sys.argv[1] if len(sys.argv) > 1 else ""
RECORD = sys.argv[2] if len(sys.argv) > 2 else None
TOOLS = [
    types.Tool(
        name=f"tool_{i}",
        description=f"Tool number {i}." + (SUFFIX if i == 6 else ""),
        input_schema={"type": "object", "properties": {"x": {"type": "integer"}}},
    )
    for i in range(7)
]
PROMPTS = [types.Prompt(name="p_a", description="Prompt A"), types.Prompt(name="p_b")]
PAGE = 3


async def list_tools(
    ctx: object, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    cursor = params.cursor if params is not None else None
    if RECORD:
        with open(RECORD, "a", encoding="utf-8") as fh:
            fh.write(f"tools/list cursor={cursor}\n")
    start = int(cursor) if cursor else 0
    end = start + PAGE
    return types.ListToolsResult(
        tools=TOOLS[start:end], next_cursor=str(end) if end < len(TOOLS) else None
    )


async def list_prompts(
    ctx: object, params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=PROMPTS)


server = Server(
    "sdk-lowlevel-fixture",
    version="0.1.0",
    instructions="Paged fixture.",
    on_list_tools=list_tools,
    on_list_prompts=list_prompts,
)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
