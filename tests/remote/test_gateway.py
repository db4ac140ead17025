"""``toolpin gateway``: an MCP client that speaks only HTTP (the SDK ``Client`` with a URL)
reaches a remote SDK server through toolpin's check, in both eras; a changed server is
blocked; a request whose Host or Origin is not this machine is refused."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, MCPError

from tests.proxy.harness import proxy_env, run_cli
from tests.remote.helpers import audit_events
from tests.remote.http_servers import serve_asgi
from tests.remote.test_remote_sdk import changing_server, sdk_server

DRIFT = -31042


@contextmanager
def gateway(home: Path, url: str, *options: str) -> Iterator[str]:
    """``toolpin gateway --listen 127.0.0.1:0 --url URL``; yields its endpoint."""
    argv = [sys.executable, "-m", "toolpin", "gateway", "--listen", "127.0.0.1:0", *options]
    process = subprocess.Popen(
        [*argv, "--url", url],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=proxy_env(home),
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline().decode()
        assert first.startswith("toolpin: gateway for "), first
        yield first.rsplit(" at ", 1)[1].strip()
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) == 0
        if process.stderr is not None:
            process.stderr.close()


async def tools_and_sum(endpoint: str, mode: str) -> tuple[list[str], str]:
    async with Client(endpoint, mode=mode) as client:  # type: ignore[arg-type]
        modern = client.protocol_version == "2026-07-28"
        assert modern == (mode == "auto"), client.protocol_version
        names = [t.name for t in (await client.list_tools()).tools]
        result = await client.call_tool("add", {"a": 40, "b": 2})
        return names, str(result.content)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_an_http_client_through_the_gateway(toolpin_home: Path, mode: str) -> None:
    app = sdk_server("gw")
    with (
        serve_asgi(app.streamable_http_app()) as base,
        gateway(toolpin_home, f"{base}/mcp", "--name", "docs") as endpoint,
    ):
        names, text = anyio.run(tools_and_sum, endpoint, mode)
        assert names == ["add"]
        assert "42" in text
        assert audit_events(toolpin_home) == ["pin"]
        # The server changes: the next session (or request) is blocked, nothing runs.
        calls: list[str] = []

        def sneaky(x: str) -> str:
            """Send x to the maintainer."""
            calls.append(x)
            return x

        app.add_tool(sneaky, name="sneaky")

        async def blocked() -> int:
            try:  # at connect, or at the listing
                async with Client(endpoint, mode=mode) as client:  # type: ignore[arg-type]
                    await client.list_tools()
            except MCPError as exc:
                return exc.error.code
            except BaseExceptionGroup as group:
                leaf: BaseException = group
                while isinstance(leaf, BaseExceptionGroup):
                    leaf = leaf.exceptions[0]
                assert isinstance(leaf, MCPError), leaf
                return leaf.error.code
            raise AssertionError("the client was not refused")

        assert anyio.run(blocked) == DRIFT
        assert calls == []
    assert audit_events(toolpin_home)[-1] == "drift"


def test_host_and_origin_must_be_this_machine(toolpin_home: Path) -> None:
    with (
        serve_asgi(sdk_server("gw").streamable_http_app()) as base,
        gateway(toolpin_home, f"{base}/mcp") as endpoint,
    ):
        body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        with httpx2.Client(trust_env=False, timeout=10) as client:
            evil = client.post(
                endpoint, content=body, headers={**headers, "Origin": "http://evil.example"}
            )
            assert evil.status_code == 403
            rebound = client.post(
                endpoint, content=body, headers={**headers, "Host": "evil.example"}
            )
            assert rebound.status_code == 403
            port = endpoint.split(":")[2].split("/")[0]
            ours = {**headers, "Origin": f"http://localhost:{port}"}
            no_session = client.post(endpoint, content=body, headers=ours)
            assert no_session.status_code == 400  # allowed through, but a ping needs a session
            assert client.get(endpoint).status_code == 405
            batch = client.post(endpoint, content=b"[" + body + b"]", headers=headers)
            assert batch.status_code == 400


def test_the_gateway_listens_on_this_machine_only(toolpin_home: Path) -> None:
    done = run_cli(
        toolpin_home, "gateway", "--listen", "0.0.0.0:8765", "--url", "https://x.test/mcp"
    )
    assert done.returncode == 2
    assert "listens on this machine only" in done.stderr
    assert not toolpin_home.exists()


def test_a_change_announced_mid_session_reaches_the_get_stream_and_is_blocked(
    toolpin_home: Path,
) -> None:
    app, state = changing_server()
    notes: list[str] = []

    async def handler(message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if isinstance(method, str):
            notes.append(method)

    async def session(endpoint: str) -> int:
        async with Client(endpoint, mode="legacy", message_handler=handler) as client:
            assert {t.name for t in (await client.list_tools()).tools} == {"add", "mutate"}
            await client.call_tool("mutate", {})
            with anyio.fail_after(15):
                while "notifications/tools/list_changed" not in notes:
                    await anyio.sleep(0.05)
            with pytest.raises(MCPError) as caught:
                await client.list_tools(cache_mode="bypass")
            return caught.value.error.code

    with (
        serve_asgi(app.streamable_http_app()) as base,
        gateway(toolpin_home, f"{base}/mcp") as endpoint,
    ):
        assert anyio.run(session, endpoint) == DRIFT
    assert state.get("sent") is True
    assert audit_events(toolpin_home) == ["pin", "drift"]
