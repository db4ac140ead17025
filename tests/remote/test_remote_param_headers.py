"""The 2026-07-28 request metadata headers the relay sends (MCP 2026-07-28, Streamable
HTTP, "Request Metadata"): ``Mcp-Method``, ``Mcp-Name`` and the ``Mcp-Param-*`` mirrors of
``x-mcp-header`` arguments, checked by the SDK's own server (which refuses a call whose
headers do not match its body), with the SDK ``Client`` on toolpin's stdio side."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Annotated, Any

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from pydantic import Field

from tests.remote.gate import Gate
from tests.remote.helpers import through_toolpin
from tests.remote.http_servers import serve_asgi
from toolpin.remote.param_headers import header_map, param_headers


def regional_server() -> MCPServer:
    app = MCPServer("regional")

    @app.tool()
    def where(
        region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
        query: str,
        dry: Annotated[bool, Field(json_schema_extra={"x-mcp-header": "Dry"})] = False,
    ) -> str:
        """Run a query in a region."""
        return f"{query} in {region}"

    return app


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_relay_mirrors_the_request_into_headers(toolpin_home: Path, mode: str) -> None:
    gate = Gate(regional_server().streamable_http_app())

    async def session() -> list[str]:
        out = []
        async with Client(through_toolpin(toolpin_home, f"{gate_url}/mcp"), mode=mode) as c:
            for region in ("us-west1", "Zürich", " padded "):
                result = await c.call_tool("where", {"region": region, "query": "q"})
                assert not result.is_error, result
                out.append(str(result.content))
            result = await c.call_tool("where", {"region": "eu", "query": "q", "dry": True})
            assert not result.is_error
        return out

    with serve_asgi(gate) as gate_url:
        answers = anyio.run(session)
    assert "q in Zürich" in answers[1]
    calls = [h for h in gate.seen if h.get("mcp-name") == "where"]
    if mode == "legacy":
        assert calls == []  # the handshake era has no request metadata headers
        assert not any(k.startswith("mcp-param-") for h in gate.seen for k in h)
        return
    assert len(calls) == 4
    assert all(h["mcp-method"] == "tools/call" for h in calls)
    assert all(h["mcp-protocol-version"] == "2026-07-28" for h in calls)
    regions = [h["mcp-param-region"] for h in calls]
    encoded = "=?base64?" + base64.b64encode("Zürich".encode()).decode() + "?="
    assert regions == ["us-west1", encoded, "=?base64?IHBhZGRlZCA=?=", "eu"]
    assert "mcp-param-dry" not in calls[0]  # absent argument: no header
    assert calls[3]["mcp-param-dry"] == "true"
    listed = [h for h in gate.seen if h.get("mcp-method") == "tools/list"]
    assert listed and all("mcp-name" not in h for h in listed)


def schema(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def test_header_maps_follow_the_schema_rules() -> None:
    nested = schema(where=schema(zone={"type": "string", "x-mcp-header": "Zone"}))
    assert header_map(nested) == {("where", "zone"): "Zone"}
    assert header_map(schema(n={"type": "integer", "x-mcp-header": "N"})) == {("n",): "N"}
    default = schema(q={"type": "string", "default": {"x-mcp-header": "Data"}})
    assert header_map(default) == {}  # instance data is not a schema position
    invalid = {
        "through items": {
            "type": "object",
            "properties": {
                "xs": {"type": "array", "items": {"type": "string", "x-mcp-header": "X"}}
            },
        },
        "through oneOf": {"oneOf": [schema(a={"type": "string", "x-mcp-header": "A"})]},
        "through $defs": {"$defs": {"d": {"type": "string", "x-mcp-header": "D"}}},
        "on the root": {"type": "object", "x-mcp-header": "Root"},
        "a number": schema(f={"type": "number", "x-mcp-header": "F"}),
        "no type": schema(f={"x-mcp-header": "F"}),
        "not a token": schema(s={"type": "string", "x-mcp-header": "Bad Name"}),
        "empty": schema(s={"type": "string", "x-mcp-header": ""}),
        "not a string": schema(s={"type": "string", "x-mcp-header": 7}),
        "duplicate": schema(
            a={"type": "string", "x-mcp-header": "Key"},
            b={"type": "string", "x-mcp-header": "key"},
        ),
    }
    for why, bad in invalid.items():
        assert isinstance(header_map(bad), str), why


def test_param_values_are_encoded_as_the_spec_says() -> None:
    mapping = {("s",): "S", ("i",): "I", ("b",): "B", ("o", "z"): "Z"}
    got = param_headers(mapping, {"s": "=?base64?x?=", "i": -7, "b": False, "o": {"z": "a\nb"}})
    assert got == {
        "Mcp-Param-S": "=?base64?" + base64.b64encode(b"=?base64?x?=").decode() + "?=",
        "Mcp-Param-I": "-7",
        "Mcp-Param-B": "false",
        "Mcp-Param-Z": "=?base64?" + base64.b64encode(b"a\nb").decode() + "?=",
    }
    assert param_headers(mapping, {"s": None}) == {}  # null and absent: omitted
    assert param_headers(mapping, None) == {}
    assert isinstance(param_headers({("i",): "I"}, {"i": 1 << 60}), str)


def annotated_lowlevel_server() -> Any:
    """A low-level SDK server listing one tool whose ``x-mcp-header`` breaks the rules
    (on a ``number``) and one whose annotation is fine."""
    from mcp import types
    from mcp.server.lowlevel import Server

    tools = [
        types.Tool(
            name="bad",
            input_schema=schema(f={"type": "number", "x-mcp-header": "F"}),
        ),
        types.Tool(
            name="good",
            input_schema=schema(k={"type": "string", "x-mcp-header": "K"}),
        ),
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=f"ran {params.name}")])

    return Server("annotated", on_list_tools=list_tools, on_call_tool=call_tool)


def test_a_call_to_a_tool_with_an_invalid_annotation_is_refused(toolpin_home: Path) -> None:
    gate = Gate(annotated_lowlevel_server().streamable_http_app())

    async def session() -> tuple[Any, Any]:
        async with Client(through_toolpin(toolpin_home, f"{url}/mcp")) as client:
            assert client.protocol_version == "2026-07-28"
            await client.list_tools()
            good = await client.call_tool("good", {"k": "v"})
            with pytest.raises(Exception) as bad:
                await client.call_tool("bad", {"f": 1.5})
            return good, bad.value

    with serve_asgi(gate) as url:
        good, bad = anyio.run(session)
    assert "ran good" in str(good.content)
    assert "cannot be sent over HTTP" in str(bad)
    assert [h.get("mcp-name") for h in gate.seen if h.get("mcp-method") == "tools/call"] == ["good"]
    assert any(h.get("mcp-param-k") == "v" for h in gate.seen)
