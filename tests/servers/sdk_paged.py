"""An SDK low-level ``Server`` that paginates tools, prompts and resources (2 per page).

Run as a script (stdio). Five tools ``t0``..``t4``, three prompts, three resources.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

PAGE = 2
TOOLS = [
    types.Tool(
        name=f"t{i}",
        description=f"Tool number {i}.",
        input_schema={"type": "object", "properties": {"x": {"type": "integer"}}},
    )
    for i in range(5)
]
PROMPTS = [types.Prompt(name=f"p{i}", description=f"Prompt {i}.") for i in range(3)]
RESOURCES = [
    types.Resource(uri=f"memo://r{i}", name=f"r{i}", mime_type="text/plain") for i in range(3)
]


def _page(
    items: list[Any], params: types.PaginatedRequestParams | None
) -> tuple[list[Any], str | None]:
    start = int(params.cursor) if params is not None and params.cursor else 0
    end = start + PAGE
    return items[start:end], (str(end) if end < len(items) else None)


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    page, cursor = _page(TOOLS, params)
    return types.ListToolsResult(tools=page, next_cursor=cursor)


async def list_prompts(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    page, cursor = _page(PROMPTS, params)
    return types.ListPromptsResult(prompts=page, next_cursor=cursor)


async def list_resources(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    page, cursor = _page(RESOURCES, params)
    return types.ListResourcesResult(resources=page, next_cursor=cursor)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    x = (params.arguments or {}).get("x", 0)
    return types.CallToolResult(content=[types.TextContent(text=f"{params.name}:{x * 2}")])


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    return types.GetPromptResult(
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(text=f"say {params.name}"))
        ]
    )


async def read_resource(
    ctx: Any, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=str(params.uri), text=f"body of {params.uri}")]
    )


server = Server(
    "sdk-paged",
    version="1.0.0",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_prompts=list_prompts,
    on_get_prompt=get_prompt,
    on_list_resources=list_resources,
    on_read_resource=read_resource,
)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
