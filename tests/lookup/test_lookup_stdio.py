"""``toolpin lookup`` on stdio, through the real MCP SDK ``Client``, in both protocol eras."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.lookup.conftest import PYTHON, WEATHER, lookup_env
from tests.lookup.lookup_helpers import LogBuilder, server_id_of
from toolpin.pins.store import PinStore

TOOLS = ["check_definitions", "log_status", "lookup_server", "pending_reviews", "server_history"]


def params(home: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=PYTHON, args=["-m", "toolpin", "lookup", *args], env=lookup_env(home)
    )


async def _call(client: Client, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await client.call_tool(name, args or {})
    assert not result.is_error, result
    assert result.structured_content is not None
    text = result.content[0]
    assert text.type == "text"
    assert f"status: {result.structured_content['status']}" in text.text
    return result.structured_content


@pytest.mark.parametrize(("mode", "era"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_every_tool_over_stdio(
    weather_log: LogBuilder, blocked_store: PinStore, toolpin_home: Path, mode: str, era: str
) -> None:
    server = params(toolpin_home, "--log", str(weather_log.root), "--vkey", weather_log.vkey)

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(server, mode=mode) as client:
            out["era"] = client.protocol_version
            listing = await client.list_tools()
            out["tools"] = {t.name: t for t in listing.tools}
            out["lookup"] = await _call(client, "lookup_server", {"server": "@acme/weather"})
            out["history"] = await _call(client, "server_history", {"server": WEATHER})
            cur = out["lookup"]["server"]["digests"]["tools"]
            out["check"] = await _call(
                client, "check_definitions", {"server": WEATHER, "hash": cur}
            )
            first = out["history"]["history"][0]["surface"]
            out["old"] = await _call(
                client, "check_definitions", {"server": WEATHER, "hash": first}
            )
            out["reviews"] = await _call(client, "pending_reviews")
            out["status"] = await _call(client, "log_status")
        return out

    out = anyio.run(session)
    assert out["era"] == era
    tools = out["tools"]
    assert sorted(tools) == TOOLS
    for t in tools.values():
        assert t.output_schema is not None and t.output_schema["type"] == "object"
        assert t.annotations.read_only_hint is True
        assert t.annotations.destructive_hint is False
        assert t.annotations.open_world_hint is False  # a log directory: nothing remote

    lookup = out["lookup"]
    assert lookup["status"] == "found"
    weather = lookup["server"]
    assert weather["id"] == server_id_of(WEATHER)
    assert weather["firstSeen"] == "2026-11-01T04:00:00Z"
    assert weather["lastSeen"] == "2026-11-20T04:00:00Z"
    assert weather["changes"] == 1
    assert weather["lastChange"]["window"] == {
        "after": "2026-11-01T04:00:00Z",
        "before": "2026-11-20T04:00:00Z",
    }
    assert weather["lastChange"]["labels"] == ["instruction", "new-field", "secrets"]
    assert lookup["log"]["checkpoint"]["size"] == 4
    assert lookup["log"]["checkpoint"]["root"] == weather_log.log.checkpoint.root_b64

    history = out["history"]["history"]
    assert [h["event"] for h in history] == ["first", "change"]
    assert history[1]["items"] == [
        {
            "kind": "tool",
            "name": "forecast",
            "status": "changed",
            "labels": ["instruction", "new-field", "secrets"],
        }
    ]
    assert out["check"]["status"] == "seen" and out["check"]["current"] is True
    assert out["check"]["matchedAs"] == "tools"
    assert out["old"]["status"] == "seen" and out["old"]["current"] is False
    assert out["old"]["matchedAs"] == "surface"

    reviews = out["reviews"]
    assert reviews["count"] == 1
    (review,) = reviews["reviews"]
    assert review["id"] == "0123456789abcdef"
    assert review["name"] == "web-search"
    assert review["review"] == "toolpin review 0123456789abcdef"
    assert review["labels"] == ["instruction", "new-tool", "secrets"]

    status = out["status"]
    assert status["verified"] is True and status["checkpoint"]["size"] == 4
    assert status["servers"] == 3 and status["newestEntryAt"] == "2026-11-21T04:00:00Z"
    # Nothing a server wrote left the server: not the poisoned description, not its words.
    wire = json.dumps(out, default=str)
    for word in ("ssh", "id_rsa", "Before calling", "forecast."):
        assert word not in wire


def test_no_log_configured_answers_so(toolpin_home: Path) -> None:
    async def session() -> tuple[dict[str, Any], dict[str, Any]]:
        async with Client(params(toolpin_home)) as client:
            return (
                await _call(client, "lookup_server", {"server": "anything"}),
                await _call(client, "log_status"),
            )

    lookup, status = anyio.run(session)
    assert lookup["status"] == "no-log" and lookup["server"] is None
    assert lookup["log"] == {
        "status": "not-configured",
        "source": None,
        "checkpoint": None,
        "stale": None,
    }
    assert status["verified"] is False and status["checkpoint"] is None


def test_a_log_signed_by_another_key_gives_no_answer(
    weather_log: LogBuilder, toolpin_home: Path
) -> None:
    from tests.lookup.lookup_helpers import signer

    other = signer("two").verifier.text
    server = params(toolpin_home, "--log", str(weather_log.root), "--vkey", other)

    async def session() -> dict[str, Any]:
        async with Client(server) as client:
            return await _call(client, "lookup_server", {"server": WEATHER})

    answer = anyio.run(session)
    assert answer["status"] == "no-log"
    assert answer["log"]["status"] == "unverified" and answer["server"] is None


def test_bad_arguments_get_a_fixed_error(weather_log: LogBuilder, toolpin_home: Path) -> None:
    server = params(toolpin_home, "--log", str(weather_log.root), "--vkey", weather_log.vkey)

    async def session() -> list[Any]:
        async with Client(server) as client:
            return [
                await client.call_tool("check_definitions", {"server": WEATHER}),
                await client.call_tool("lookup_server", {"server": "x" * 600}),
                await client.call_tool("lookup_server", {"server": WEATHER, "extra": "<b>"}),
            ]

    results = anyio.run(session)
    texts = [r.content[0].text for r in results]
    assert all(r.is_error for r in results)
    assert texts == [
        "give exactly one of hash or definitions",
        "server must be a non-empty string of at most 512 characters",
        "unknown argument",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--log", "/nonexistent/log", "--vkey", "KEY"],
            "--log /nonexistent/log is not a directory",
        ),
        (["--log", "LOG"], "--log needs --vkey"),
        (["--vkey", "KEY"], "--vkey without --log"),
        (["--log", "ftp://example.com/log", "--vkey", "KEY"], "a directory or an http(s) URL"),
        (["--log", "LOG", "--vkey", "garbage"], "neither a verifier key nor a file"),
    ],
)
def test_unusable_options_exit_2(
    weather_log: LogBuilder, toolpin_home: Path, args: list[str], message: str
) -> None:
    import subprocess

    argv = [a.replace("LOG", str(weather_log.root)).replace("KEY", weather_log.vkey) for a in args]
    done = subprocess.run(
        [PYTHON, "-m", "toolpin", "lookup", *argv],
        capture_output=True,
        text=True,
        timeout=30,
        env=lookup_env(toolpin_home),
    )
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
