"""Hostile HTTP in front of ``toolpin run --url`` (the SDK ``Client`` on the stdio side):
wrong content types, a 10 MB event, a stream that never ends, a redirect to another
origin, an ``Mcp-Session-Id`` that changes, a server that cloaks. Each fails closed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client, MCPError

from tests.remote.helpers import audit_events, only_pin, pin_files, through_toolpin
from tests.remote.hostile_server import hostile

DRIFT = -31042
UNVERIFIED = -31043


async def refusal(params: Any) -> MCPError:
    """The MCPError the client gets (at connect or at its first listing)."""
    try:
        async with Client(params, mode="legacy") as client:
            await client.list_tools()
    except MCPError as exc:
        return exc
    except BaseExceptionGroup as group:
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup):
            leaf = leaf.exceptions[0]
        if isinstance(leaf, MCPError):
            return leaf
        raise
    raise AssertionError("the client was not refused")


def test_a_listing_with_the_wrong_content_type_is_never_used(
    toolpin_home: Path, tmp_path: Path
) -> None:
    stderr = tmp_path / "stderr.txt"
    with hostile("wrong-type") as server:
        error = anyio.run(refusal, through_toolpin(toolpin_home, server.url, stderr=stderr))
    assert error.error.code == UNVERIFIED
    assert pin_files(toolpin_home) == []
    assert "content type that is not JSON-RPC" in stderr.read_text()


def test_a_stream_that_never_ends_meets_the_timeout(toolpin_home: Path, tmp_path: Path) -> None:
    stderr = tmp_path / "stderr.txt"
    with hostile("endless") as server:
        params = through_toolpin(toolpin_home, server.url, "--timeout", "2", stderr=stderr)
        error = anyio.run(refusal, params)
    assert error.error.code == UNVERIFIED
    assert pin_files(toolpin_home) == []
    assert "did not answer the check in time" in stderr.read_text()


def test_a_redirect_to_another_origin_is_not_followed(toolpin_home: Path, tmp_path: Path) -> None:
    stderr = tmp_path / "stderr.txt"
    with hostile("plain") as elsewhere, hostile("redirect", target=elsewhere.url) as server:
        params = through_toolpin(
            toolpin_home,
            server.url,
            "--header",
            "X-Api-Key: ${env:KEY}",
            KEY="do-not-leak",
            stderr=stderr,
        )
        error = anyio.run(refusal, params)
        assert elsewhere.requests == []  # neither the request nor its header went there
    assert error.error.code == UNVERIFIED
    assert "another origin" in stderr.read_text()
    assert "do-not-leak" not in stderr.read_text()


def test_a_changing_session_id_stops_the_session(toolpin_home: Path, tmp_path: Path) -> None:
    stderr = tmp_path / "stderr.txt"
    with hostile("session-change") as server:
        error = anyio.run(refusal, through_toolpin(toolpin_home, server.url, stderr=stderr))
        sent = [h for h in server.requests if h[0] == "POST"]
    assert error.error.code == UNVERIFIED
    assert "changed its Mcp-Session-Id" in stderr.read_text()
    assert pin_files(toolpin_home) == []
    assert all(msg is None or msg.get("method") != "tools/call" for _, _, msg in sent)


def test_a_ten_megabyte_event_is_read_whole_and_checked(toolpin_home: Path) -> None:
    with hostile("big-event") as server:

        async def session() -> None:
            async with Client(through_toolpin(toolpin_home, server.url), mode="legacy") as client:
                tools = (await client.list_tools()).tools
                assert len(tools[0].description or "") == 10 << 20

        anyio.run(session)
    assert audit_events(toolpin_home) == ["pin"]


def test_a_cloaking_server_is_caught_on_the_clients_listing(toolpin_home: Path) -> None:
    with hostile("cloak") as server:
        error = anyio.run(refusal, through_toolpin(toolpin_home, server.url))
        calls = [m for _, _, m in server.requests if m and m.get("method") == "tools/call"]
    assert error.error.code == DRIFT
    assert audit_events(toolpin_home) == ["pin", "drift"]
    pinned = only_pin(toolpin_home)
    assert pinned["pin"]["tools"]["items"][0]["definition"]["description"] == "Add two numbers."
    assert pinned["pending"]["midSession"] is True
    assert calls == []


def test_an_sse_endpoint_on_another_origin_is_refused(toolpin_home: Path, tmp_path: Path) -> None:
    stderr = tmp_path / "stderr.txt"
    with hostile("plain") as elsewhere, hostile("sse-elsewhere", target=elsewhere.url) as server:
        params = through_toolpin(toolpin_home, server.url, "--transport", "sse", stderr=stderr)
        error = anyio.run(refusal, params)
        assert elsewhere.requests == []
    assert error.error.code == UNVERIFIED
    assert "endpoint is on another origin" in stderr.read_text()
