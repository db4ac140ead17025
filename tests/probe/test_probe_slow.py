"""The crawler's probes wait for slow servers: stdio (sandboxed) and Streamable HTTP.

Servers answer after 11 s (past the old fixed ten-second discover limit) and after the
timeout - 1 s, in both eras: over stdio the SDK's ``MCPServer`` and a handshake-era server
(it answers ``server/discover`` with "method not found"); over HTTP the SDK's
``MCPServer`` behind a front that holds every request until the server is "up", as a
2026-07-28-only server (``initialize`` gets -32022) and as a handshake-era one
(``server/discover`` gets HTTP 404). The four probes of a case run side by side.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.shared import serve_asgi

from toolpin.crawl.stdio import probe_sandboxed
from toolpin.probe.conversation import ProbeResult
from toolpin.probe.http import probe_http
from toolpin.probe.ssrf import AddressPolicy

pytestmark = pytest.mark.slow

SERVERS = Path(__file__).parents[1] / "teamlock" / "servers"
RAW = SERVERS / "raw_server.py"
SDK = SERVERS / "sdk_server.py"
SDK_ANSWER = 1.0  # seconds the SDK server needs once it reads its input (see test_teamlock_slow)
LOCAL = AddressPolicy(allow_private=True)
CASES = [
    pytest.param(11.0, 60.0, id="answers-after-11s"),
    pytest.param(13.0, 14.0, id="answers-after-timeout-minus-1s"),
]

Scope = dict[str, Any]
ASGI = Callable[..., Any]


class SlowFront:
    """ASGI middleware: every request waits until ``ready_at``; ``era`` makes the SDK's
    dual-era server answer like a one-era server."""

    def __init__(self, app: ASGI, era: str) -> None:
        self.app = app
        self.era = era
        self.ready_at = 0.0

    async def _reply(self, send: ASGI, status: int, body: bytes, kind: bytes) -> None:
        headers = [(b"content-type", kind)]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: ASGI, send: ASGI) -> None:
        import anyio

        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await anyio.sleep(max(0.0, self.ready_at - time.monotonic()))
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        request = json.loads(body) if body.strip() else {}
        method = request.get("method") if isinstance(request, dict) else None
        if self.era == "legacy" and method == "server/discover":
            await self._reply(send, 404, b"unknown method", b"text/plain")
            return
        if self.era == "modern" and method == "initialize":
            error = {"code": -32022, "message": "this server speaks 2026-07-28 only"}
            answer = {"jsonrpc": "2.0", "id": request["id"], "error": error}
            await self._reply(send, 200, json.dumps(answer).encode(), b"application/json")
            return
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return dict(await receive())

        await self.app(scope, replay, send)


@contextmanager
def slow_http_server(era: str) -> Iterator[tuple[str, SlowFront]]:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("slow-http", instructions="Slow to start.")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    front = SlowFront(server.streamable_http_app(), era)
    with serve_asgi(front) as port:
        yield f"http://127.0.0.1:{port}/mcp", front


def stdio_argv(tmp_path: Path, era: str, delay: float) -> list[str]:
    if era == "modern":
        texts = tmp_path / "sdk.json"
        texts.write_text(json.dumps({"start_delay": delay - SDK_ANSWER}), encoding="utf-8")
        return [sys.executable, str(SDK), str(texts)]
    spec = tmp_path / "legacy.json"
    tools = [{"name": "count", "inputSchema": {"type": "object"}}]
    spec.write_text(
        json.dumps({"tools": tools, "discover": "error", "strict": True, "start_delay": delay}),
        encoding="utf-8",
    )
    return [sys.executable, str(RAW), str(spec)]


@pytest.mark.parametrize(("delay", "timeout"), CASES)
def test_the_crawlers_probes_wait_for_slow_servers(
    tmp_path: Path, delay: float, timeout: float
) -> None:
    env = dict(os.environ)
    with (
        slow_http_server("modern") as (modern_url, modern),
        slow_http_server("legacy") as (
            legacy_url,
            legacy,
        ),
    ):

        def stdio(era: str) -> ProbeResult:
            argv = stdio_argv(tmp_path, era, delay)
            return probe_sandboxed(argv, env=env, cwd=None, timeout=timeout).result

        def http(url: str) -> ProbeResult:
            return probe_http(url, policy=LOCAL, timeout=timeout)

        start = time.monotonic()
        modern.ready_at = legacy.ready_at = start + delay
        with ThreadPoolExecutor(max_workers=4) as pool:
            futures = {
                "stdio modern": pool.submit(stdio, "modern"),
                "stdio legacy": pool.submit(stdio, "legacy"),
                "http modern": pool.submit(http, modern_url),
                "http legacy": pool.submit(http, legacy_url),
            }
            results = {name: future.result() for name, future in futures.items()}

    assert results["stdio modern"].era == "modern"
    assert results["http modern"].era == "modern"
    assert results["stdio legacy"].era == "handshake"
    assert results["http legacy"].era == "handshake"
    names = {
        name: [d.key for d in r.snapshot.tools.items] if r.snapshot.tools else []
        for name, r in results.items()
    }
    assert names == {
        "stdio modern": ["add"],
        "stdio legacy": ["count"],
        "http modern": ["add"],
        "http legacy": ["add"],
    }
    assert results["http modern"].snapshot.instructions == "Slow to start."
