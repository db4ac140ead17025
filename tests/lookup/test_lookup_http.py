"""``toolpin lookup --http``: Streamable HTTP on loopback, log tools only, Host/Origin checks,
a body limit and no CORS; through the real SDK ``Client`` in both eras."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, MCPError

from tests.lookup.conftest import (
    PYTHON,
    WEATHER,
    build_blocked_store,
    build_weather_log,
    lookup_env,
)

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server for the module: a log, and a pin store with a blocked server it must hide."""
    work = tmp_path_factory.mktemp("http")
    weather_log = build_weather_log(work / "log")
    toolpin_home = work / "home"
    build_blocked_store(toolpin_home)
    port = _free_port()
    proc = subprocess.Popen(
        [
            PYTHON,
            "-m",
            "toolpin",
            "lookup",
            "--log",
            str(weather_log.root),
            "--vkey",
            weather_log.vkey,
            "--http",
            str(port),
        ],
        env=lookup_env(toolpin_home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(proc.stderr.read() if proc.stderr else b"") from None
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize(("mode", "era"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_log_tools_over_http_and_never_the_pin_store(http_server: str, mode: str, era: str) -> None:
    async def session() -> tuple[str, list[str], dict[str, Any], Any]:
        async with Client(http_server, mode=mode) as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            result = await client.call_tool("lookup_server", {"server": WEATHER})
            assert result.structured_content is not None
            hidden = "served"
            try:
                await client.call_tool("pending_reviews", {})
            except MCPError as exc:
                hidden = exc.error.message
            return client.protocol_version, names, result.structured_content, hidden

    protocol, names, answer, hidden = anyio.run(session)
    assert protocol == era
    assert names == ["check_definitions", "log_status", "lookup_server", "server_history"]
    assert answer["status"] == "found" and answer["server"]["changes"] == 1
    assert answer["log"]["checkpoint"]["size"] == 4
    # The pin store is not reachable over HTTP: the tool does not exist there.
    assert hidden == "unknown tool"


def test_foreign_origin_is_refused(http_server: str) -> None:
    response = httpx2.post(
        http_server, json=INIT, headers={**HEADERS, "Origin": "http://evil.example"}
    )
    assert response.status_code == 403
    assert "access-control-allow-origin" not in response.headers


def test_foreign_host_is_refused(http_server: str) -> None:
    response = httpx2.post(http_server, json=INIT, headers={**HEADERS, "Host": "evil.example"})
    assert response.status_code == 421
    port = http_server.split(":")[2].split("/")[0]
    other_port = httpx2.post(
        http_server, json=INIT, headers={**HEADERS, "Host": f"127.0.0.1:{int(port) + 1}"}
    )
    assert other_port.status_code == 421


def test_own_origin_is_served(http_server: str) -> None:
    origin = http_server.removesuffix("/mcp")
    response = httpx2.post(http_server, json=INIT, headers={**HEADERS, "Origin": origin})
    assert response.status_code == 200


def test_oversized_body_is_refused(http_server: str) -> None:
    big = {**INIT, "params": {**INIT["params"], "pad": "x" * (100 * 1024)}}  # type: ignore[dict-item]
    response = httpx2.post(http_server, content=json.dumps(big).encode(), headers=HEADERS)
    assert response.status_code == 413


def test_no_cors_for_other_origins(http_server: str) -> None:
    preflight = httpx2.options(
        http_server,
        headers={
            "Origin": "http://evil.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert preflight.status_code >= 400
    assert not any(h.lower().startswith("access-control-") for h in preflight.headers)


def test_refused_header_values_are_logged_visibly(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from toolpin.lookup.server import VisibleText

    logger = logging.getLogger("toolpin-test-visible")
    logger.addFilter(VisibleText())
    with caplog.at_level(logging.WARNING, logger="toolpin-test-visible"):
        logger.warning("Invalid Origin header: %s", "http://a\u202eb\x1b[2J")
    (record,) = caplog.records
    assert "\u202e" not in record.getMessage() and "\x1b" not in record.getMessage()
