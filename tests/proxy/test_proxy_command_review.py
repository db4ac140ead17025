"""A changed command can be reviewed: the pin keeps the argv redacted, and ``review``,
``show`` and the block report (stderr and the -31042 ``data``) show its word diff and what
kind of change it is (executable path, package version), never a secret."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.proxy.harness import Proxy, Scripted, run_cli, tool
from toolpin.lockfile.native import dumps_with_digest
from toolpin.pins.serverid import server_id

TOOLS = [tool("read", "Read a file.")]
SECRET = "sk-live-4f9Qz7TmB2xK8wLp3NvR"
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}}


def venv_python(root: Path) -> str:
    """A second path to this interpreter, as a moved virtual environment gives."""
    path = root / ".venv" / "bin" / "python"
    path.parent.mkdir(parents=True)
    os.symlink(sys.executable, path)
    return str(path)


def pin_files(home: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in (home / "pins").glob("*.json"))


def test_a_moved_venv_and_a_new_version_are_shown_and_the_key_never(
    tmp_path: Path, toolpin_home: Path
) -> None:
    server = Scripted(tmp_path / "srv", tools=TOOLS)
    script = server.argv[1:]
    before = [venv_python(tmp_path / "a"), *script, "mcp-srv==1.0.0", "--api-key", SECRET]
    after = [venv_python(tmp_path / "b"), *script, "mcp-srv==1.1.0", "--api-key", SECRET]

    first = Proxy(toolpin_home, before, "--name", "files")
    first.initialize()
    assert first.close() == 0
    stored = pin_files(toolpin_home)
    assert "mcp-srv==1.0.0" in stored and SECRET not in stored  # kept, redacted

    proxy = Proxy(toolpin_home, after, "--name", "files")
    reply = proxy.call("initialize", INIT)
    assert reply["error"]["code"] == -31042
    assert proxy.close() == 1
    data = reply["error"]["data"]
    assert [c["kind"] for c in data["command"]["changes"]] == ["executable", "package"]
    assert data["command"]["after"][0] == after[0]
    stderr = proxy.stderr
    assert "Command changed (executable path, package version):" in stderr
    assert f"executable path: {before[0]} -> {after[0]}" in stderr
    assert "package version: mcp-srv 1.0.0 -> 1.1.0" in stderr
    for text in (stderr, json.dumps(reply), pin_files(toolpin_home)):
        assert SECRET not in text
        assert SECRET[:12] not in text

    [sid] = [p.stem for p in (toolpin_home / "pins").glob("*.json")]
    review = run_cli(toolpin_home, "review", "--name", "files")
    assert review.returncode == 0, review.stderr
    assert "Command changed (executable path, package version):" in review.stdout
    assert f"  diff:   [-{before[0]}-] {{+{after[0]}+}}" in review.stdout
    assert "[-mcp-srv==1.0.0-] {+mcp-srv==1.1.0+}" in review.stdout
    assert "--api-key ‹redacted:" in review.stdout
    show = run_cli(toolpin_home, "show", sid[:6])
    assert show.returncode == 0, show.stderr
    assert "package version: mcp-srv 1.0.0 -> 1.1.0" in show.stdout
    assert f"command: {before[0]} " in show.stdout
    as_json = json.loads(run_cli(toolpin_home, "show", sid, "--json").stdout)
    assert as_json["command"]["argv"][0] == before[0]
    assert as_json["command"]["id"] == server_id(before)  # the hash of the real argv, as before
    assert set(data) == {"reason", "server", "review", "changes", "command", "review_saved"}
    assert as_json["pending"]["command"] == data["command"]  # the -31042 data's own form
    for text in (review.stdout, review.stderr, show.stdout):
        assert SECRET not in text

    assert run_cli(toolpin_home, "approve", sid[:4]).returncode == 0
    again = Proxy(toolpin_home, after, "--name", "files")
    again.initialize()
    assert again.close() == 0
    shown = run_cli(toolpin_home, "show", "--name", "files").stdout
    assert f"command: {after[0]} " in shown and SECRET not in shown


def test_a_pin_from_an_older_toolpin_says_the_command_was_not_recorded(
    tmp_path: Path, toolpin_home: Path
) -> None:
    server = Scripted(tmp_path / "srv", tools=TOOLS)
    first = Proxy(toolpin_home, server.argv, "--name", "files")
    first.initialize()
    assert first.close() == 0
    [path] = (toolpin_home / "pins").glob("*.json")
    doc = json.loads(path.read_bytes())
    del doc["command"]["argv"]  # as an older toolpin wrote it
    doc.pop("digest", None)
    path.write_bytes(dumps_with_digest(doc))

    moved = [*server.argv, "--read-only"]
    proxy = Proxy(toolpin_home, moved, "--name", "files")
    assert proxy.call("initialize", INIT)["error"]["code"] == -31042
    assert proxy.close() == 1
    expected = "the earlier command was not recorded (pinned by an older toolpin)"
    assert expected in proxy.stderr
    review = run_cli(toolpin_home, "review", path.stem)
    assert f"Command changed: {expected}" in review.stdout
    assert "now:    " in review.stdout and "--read-only" in review.stdout
