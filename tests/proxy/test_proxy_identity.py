"""Identity follows ``--name``: the pin is found by its name and the command is part of
what is pinned, so a changed command is reviewed, never pinned silently. Without a
name the command is the identity, as before; pins keyed by the command keep working."""

from __future__ import annotations

import json
from pathlib import Path

from tests.proxy.harness import Proxy, Scripted, run_cli, tool

TOOLS = [tool("read", "Read a file.")]


def session(home: Path, argv: list[str], *options: str) -> Proxy:
    proxy = Proxy(home, argv, *options)
    proxy.initialize()
    return proxy


def listed(home: Path) -> list[dict[str, object]]:
    return list(json.loads(run_cli(home, "list", "--json").stdout))


def test_a_changed_command_under_a_name_is_reviewed(tmp_path: Path, toolpin_home: Path) -> None:
    server = Scripted(tmp_path / "srv", tools=TOOLS)
    first = session(toolpin_home, server.argv, "--name", "files")
    assert first.call("tools/list")["result"]["tools"] == TOOLS
    assert first.close() == 0
    [entry] = listed(toolpin_home)
    command = entry["command"]
    assert isinstance(command, dict) and str(command["label"]).endswith(" [2 args]")

    moved = [*server.argv, "/another/directory"]  # same tools, another command
    proxy = Proxy(toolpin_home, moved, "--name", "files")
    reply = proxy.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert reply["error"]["code"] == -31042
    assert "its command changed" in reply["error"]["message"]
    assert proxy.close() == 1
    assert "COMMAND CHANGED SINCE YOU APPROVED THIS SERVER" in proxy.stderr
    assert "Command changed (arguments):" in proxy.stderr
    assert "arguments: added /another/directory" in proxy.stderr  # the redacted argv
    [entry] = listed(toolpin_home)  # no second pin
    sid = str(entry["id"])
    review = run_cli(toolpin_home, "review", sid)
    assert review.returncode == 0
    assert "Command changed (arguments):" in review.stdout
    assert run_cli(toolpin_home, "approve", sid).returncode == 0

    again = session(toolpin_home, moved, "--name", "files")
    assert again.call("tools/list")["result"]["tools"] == TOOLS
    assert again.close() == 0
    assert "unchanged" in again.stderr
    back = Proxy(toolpin_home, server.argv, "--name", "files")  # the old command: reviewed
    reply = back.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert reply["error"]["code"] == -31042
    assert back.close() == 1


def test_without_a_name_the_command_is_the_identity(tmp_path: Path, toolpin_home: Path) -> None:
    server = Scripted(tmp_path / "srv", tools=TOOLS)
    for argv in (server.argv, [*server.argv, "x"]):
        proxy = session(toolpin_home, argv)
        proxy.call("tools/list")
        assert proxy.close() == 0
        assert "pinned" in proxy.stderr
    assert len(listed(toolpin_home)) == 2


def test_a_pin_keyed_by_the_command_keeps_working_with_a_name(
    tmp_path: Path, toolpin_home: Path
) -> None:
    server = Scripted(tmp_path / "srv", tools=TOOLS)
    old = session(toolpin_home, server.argv)  # as stores written before names were ids
    old.call("tools/list")
    assert old.close() == 0
    named = session(toolpin_home, server.argv, "--name", "files")
    named.call("tools/list")
    assert named.close() == 0
    assert "unchanged" in named.stderr
    assert len(listed(toolpin_home)) == 1


def test_list_tells_named_entries_apart(tmp_path: Path, toolpin_home: Path) -> None:
    server = Scripted(tmp_path / "srv", tools=TOOLS)
    for name, argv in (("files (a)", server.argv), ("files (b)", [*server.argv, "b"])):
        proxy = session(toolpin_home, argv, "--name", name)
        proxy.call("tools/list")
        assert proxy.close() == 0
    out = run_cli(toolpin_home, "list").stdout.splitlines()
    assert len(out) == 2
    assert "files (a)" in out[0] and "[2 args], command " in out[0]
    assert "files (b)" in out[1] and "[3 args], command " in out[1]
