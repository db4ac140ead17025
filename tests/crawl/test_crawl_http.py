"""The Streamable HTTP probe against the MCP SDK's server and hand-made servers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from crawl_helpers import FakeAPI, Reply, Seen, json_reply, sdk_http_server

from toolpin.errors import ProbeError
from toolpin.probe.http import MAX_RESPONSE_BYTES, probe_http
from toolpin.probe.ssrf import AddressPolicy

LOCAL = AddressPolicy(allow_private=True)


@pytest.mark.parametrize("options", [{}, {"json_response": True}, {"stateless_http": True}])
def test_sdk_server_in_both_eras(options: dict[str, Any]) -> None:
    with sdk_http_server(**options) as url:
        auto = probe_http(url, policy=LOCAL, timeout=15)
        legacy = probe_http(url, policy=LOCAL, timeout=15, era="handshake")
    assert auto.era == "modern" and auto.protocol_version == "2026-07-28"
    assert legacy.era == "handshake" and legacy.protocol_version == "2025-11-25"
    for result in (auto, legacy):
        assert result.snapshot.counts()["tools"] == 2
        assert result.snapshot.counts()["prompts"] == 1
        assert result.snapshot.instructions == "Use add for sums."
        assert result.identity is not None and result.identity.name == "sdk-demo"
    # Both eras see the same definitions, so the same hashes.
    assert auto.snapshot.surface_hash() == legacy.snapshot.surface_hash()


def _sse(id_: Any, result: Any, headers: dict[str, str] | None = None) -> Reply:
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {}})
    answer = json.dumps({"jsonrpc": "2.0", "id": id_, "result": result})
    text = f": comment\r\nevent: message\r\ndata: {note}\r\n\r\ndata: {answer}\r\n\r\n"
    return 200, {"Content-Type": "text/event-stream", **(headers or {})}, text.encode()


def handshake_only(seen: Seen) -> Reply:
    """Handshake-era server: SSE answers with CRLF line ends, paged tools, a session id
    it insists on, 404 for server/discover."""
    if seen.method == "DELETE":
        return 200, {}, b""
    body = seen.json()
    method = body.get("method")
    if method == "server/discover":
        return 404, {}, b"unknown"
    if method == "initialize":
        result = {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw-http", "version": "0.1"},
        }
        return _sse(body["id"], result, {"Mcp-Session-Id": "sess-1"})
    if seen.headers.get("mcp-session-id") != "sess-1":
        return 400, {}, b"no session"
    if method == "notifications/initialized":
        return 202, {}, b""
    if method == "tools/list":
        page2 = (body.get("params") or {}).get("cursor") == "p2"
        tools = [{"name": "two" if page2 else "one", "inputSchema": {"type": "object"}}]
        return _sse(body["id"], {"tools": tools} if page2 else {"tools": tools, "nextCursor": "p2"})
    return 400, {}, b"unexpected"


@pytest.fixture
def server() -> Iterator[FakeAPI]:
    api = FakeAPI().start()
    try:
        yield api
    finally:
        api.stop()


def test_handshake_fallback_with_session_and_sse(server: FakeAPI) -> None:
    server.routes["/mcp"] = handshake_only
    result = probe_http(f"{server.url}/mcp", policy=LOCAL, timeout=10)
    assert result.era == "handshake" and result.protocol_version == "2025-06-18"
    assert result.snapshot.tools is not None
    assert [d.key for d in result.snapshot.tools.items] == ["one", "two"]
    posts = [s for s in server.seen if s.method == "POST"]
    methods = [s.json().get("method") for s in posts]
    assert methods == [
        "server/discover",
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/list",
    ]
    assert server.seen[-1].method == "DELETE"  # the session is closed
    discover = posts[0]
    assert discover.headers["mcp-protocol-version"] == "2026-07-28"
    assert discover.headers["mcp-method"] == "server/discover"
    assert discover.headers["accept"] == "application/json, text/event-stream"
    assert posts[3].headers["mcp-protocol-version"] == "2025-06-18"
    assert posts[3].headers["mcp-session-id"] == "sess-1"
    assert "mcp-method" not in posts[3].headers


def test_modern_server_gets_meta_in_every_request(server: FakeAPI) -> None:
    def modern(seen: Seen) -> Reply:
        body = seen.json()
        meta = (body.get("params") or {}).get("_meta") or {}
        if meta.get("io.modelcontextprotocol/protocolVersion") != "2026-07-28":
            return json_reply({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32022}})
        if body["method"] == "server/discover":
            result = {"capabilities": {"tools": {}}, "supportedVersions": ["2026-07-28"]}
            return json_reply({"jsonrpc": "2.0", "id": body["id"], "result": result})
        tools = [{"name": "m", "inputSchema": {"type": "object"}}]
        return json_reply({"jsonrpc": "2.0", "id": body["id"], "result": {"tools": tools}})

    server.routes["/mcp"] = modern
    result = probe_http(f"{server.url}/mcp", policy=LOCAL, timeout=10)
    assert result.era == "modern"
    assert [s.json()["method"] for s in server.seen] == ["server/discover", "tools/list"]
    assert server.seen[1].headers["mcp-method"] == "tools/list"


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ((401, {}, b""), "requires authorization"),
        ((500, {}, b"oops"), "HTTP 500"),
        ((200, {"Content-Type": "application/json"}, b"x" * (MAX_RESPONSE_BYTES + 10)), "MiB"),
    ],
)
def test_failures_have_fixed_reasons(server: FakeAPI, reply: Reply, reason: str) -> None:
    server.routes["/mcp"] = lambda seen: reply
    with pytest.raises(ProbeError, match=reason) as caught:
        probe_http(f"{server.url}/mcp", policy=LOCAL, timeout=10)
    assert "oops" not in caught.value.message


def test_a_server_that_refuses_both_eras(server: FakeAPI) -> None:
    server.routes["/mcp"] = lambda seen: (404, {}, b"")
    with pytest.raises(ProbeError, match="refused the initialize handshake"):
        probe_http(f"{server.url}/mcp", policy=LOCAL, timeout=10)


def test_an_event_stream_without_our_answer(server: FakeAPI) -> None:
    def only_notes(seen: Seen) -> Reply:
        body = seen.json()
        if body.get("method") == "server/discover":
            return 404, {}, b""
        return _sse("someone-else", {})

    server.routes["/mcp"] = only_notes
    with pytest.raises(ProbeError, match="ended without an answer"):
        probe_http(f"{server.url}/mcp", policy=LOCAL, timeout=10)
