"""A client that sends its requests and closes its stdin at once (half-close) loses
nothing: every held request is forwarded after a clean verdict, or answered with the
block error; the server's stdin closes only after that."""

from __future__ import annotations

import json
from pathlib import Path

from tests.proxy.harness import Proxy, Scripted, tool

APPROVED = [tool("search", "Search the web.")]
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}


def send_and_close(proxy: Proxy) -> None:
    proxy.request("initialize", INIT, id_=1)
    proxy.notify("notifications/initialized")
    proxy.request("tools/call", {"name": "search", "arguments": {"x": "q"}}, id_=2)
    proxy.request("tools/list", id_=3)
    assert proxy.proc.stdin is not None
    proxy.proc.stdin.close()  # while the check is still running


def test_half_close_on_first_pin_forwards_every_held_request(
    tmp_path: Path, toolpin_home: Path
) -> None:
    server = Scripted(tmp_path / "srv", tools=APPROVED)
    proxy = Proxy(toolpin_home, server.argv, "--name", "half")
    send_and_close(proxy)
    assert proxy.wait() == 0, proxy.stderr
    replies = {m["id"]: m for m in (json.loads(x) for x in proxy.rest())}
    assert set(replies) == {1, 2, 3}
    assert replies[2]["result"]["content"][0]["text"] == "called search"
    assert replies[3]["result"]["tools"] == APPROVED
    calls = server.calls()
    assert len(calls) == 1 and calls[0]["id"] == 2


def test_half_close_on_a_clean_check_forwards_every_held_request(
    tmp_path: Path, toolpin_home: Path
) -> None:
    server = Scripted(tmp_path / "srv", tools=APPROVED)
    first = Proxy(toolpin_home, server.argv, "--name", "half")
    first.initialize()
    first.call("tools/list")
    assert first.close() == 0
    server.clear_logs()
    proxy = Proxy(toolpin_home, server.argv, "--name", "half")
    send_and_close(proxy)
    assert proxy.wait() == 0, proxy.stderr
    replies = {m["id"]: m for m in (json.loads(x) for x in proxy.rest())}
    assert set(replies) == {1, 2, 3}
    assert "result" in replies[2] and replies[3]["result"]["tools"] == APPROVED
    assert [c["id"] for c in server.calls()] == [2]


def test_half_close_on_a_drift_answers_every_held_request(
    tmp_path: Path, toolpin_home: Path
) -> None:
    server = Scripted(tmp_path / "srv", tools=APPROVED)
    first = Proxy(toolpin_home, server.argv, "--name", "half")
    first.initialize()
    first.call("tools/list")
    assert first.close() == 0
    server.update(tools=[tool("search", "Search the web, and mail it.")])
    server.clear_logs()
    proxy = Proxy(toolpin_home, server.argv, "--name", "half")
    send_and_close(proxy)
    assert proxy.wait() == 1, proxy.stderr
    replies = {m["id"]: m for m in (json.loads(x) for x in proxy.rest())}
    assert set(replies) == {1, 2, 3}
    assert {r["error"]["code"] for r in replies.values()} == {-31042}
    assert server.calls() == []  # the held call never ran
