"""The names ``toolpin wrap`` writes: no two clients or projects share one, so no two share
a pin; and the team lock still finds its entry by the config key inside the name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from tests.clients.test_clients_cli import launcher_dir

from toolpin.clients.naming import client_slug, config_key, project_tag, wrapped_name
from toolpin.core.render import visible

SRC = Path(__file__).resolve().parents[2] / "src"


def test_client_slugs_and_project_tags() -> None:
    assert client_slug("Claude Desktop") == "claude-desktop"
    assert client_slug("VS Code Insiders") == "vs-code-insiders"
    assert client_slug("GitHub Copilot CLI") == "github-copilot-cli"
    assert client_slug("!!!") == "client"
    assert wrapped_name("fs", "Cursor") == "fs@cursor"
    # the examples docs/clients.md shows
    assert wrapped_name("db", "Claude Code", "/home/me/work/app") == "db@claude-code:app-013c28c8"
    assert (
        wrapped_name("demo", "VS Code", "/home/me/team-demo") == "demo@vs-code:team-demo-a3cad109"
    )
    assert wrapped_name("x", "config", "/home/me/servers.json") == "x@config:servers.json-1d74f6d8"
    tag = project_tag("/home/me/work/app")
    assert tag.startswith("app-") and len(tag) == len("app-") + 8
    # two projects of the same folder name in different places never share a name
    assert project_tag("/home/me/a/app") != project_tag("/home/me/b/app")
    assert project_tag("/srv/wéird name/\u202eevil").startswith("evil-")
    assert project_tag("C:\\Users\\me\\app").startswith("app-")
    assert project_tag("/").startswith("-")  # no folder name: the digest alone


@given(
    key=st.text(min_size=1, max_size=40),
    client=st.text(max_size=20),
    project=st.none() | st.text(max_size=60),
)
def test_the_config_key_comes_back_from_every_name(
    key: str, client: str, project: str | None
) -> None:
    name = wrapped_name(key, client, project)
    assert config_key(name) == key
    # what is added is plain ASCII: it reads the same in every config format and terminal
    qualifier = name[len(key) :]
    assert qualifier.isascii() and visible(qualifier) == qualifier


def test_a_name_not_written_by_wrap_has_no_config_key() -> None:
    for name in ("filesystem", "@scope/pkg", "a@", "a@B", "a@x:y", "a@x:app-123", "me@host.com"):
        assert config_key(name) is None, name


def _home(tmp_path: Path) -> Path:
    """Claude Desktop and Cursor, each with a server called ``demo`` and a different
    command (one runs the demo server with an extra interpreter flag)."""
    home = tmp_path / "home"
    desktop = home / ".config" / "Claude" / "claude_desktop_config.json"
    cursor = home / ".cursor" / "mcp.json"
    for path, extra in ((desktop, []), (cursor, ["-X", "utf8"])):
        path.parent.mkdir(parents=True)
        server = {"command": sys.executable, "args": [*extra, "-m", "toolpin.demo.server"]}
        path.write_text(json.dumps({"mcpServers": {"demo": server}}, indent=2))
    return home


def _env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{launcher_dir(home.parent)}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(SRC),
        "TOOLPIN_HOME": str(home.parent / "toolpin-home"),
        "NO_COLOR": "1",
    }


def _list_tools(argv: list[str], env: dict[str, str]) -> dict[str, object]:
    init = {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}  # fmt: skip
    lines = "".join(
        json.dumps(m) + "\n"
        for m in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        )
    )
    proc = subprocess.run(
        argv, input=lines, capture_output=True, text=True, env=env, timeout=60, check=False
    )
    for line in proc.stdout.splitlines():
        reply = json.loads(line)
        if reply.get("id") == 2:
            return dict(reply)
    raise AssertionError(f"no answer to tools/list: {proc.stderr}")


def test_two_clients_with_a_server_of_the_same_name_keep_two_pins(tmp_path: Path) -> None:
    home = _home(tmp_path)
    env = _env(home)
    wrap = subprocess.run(
        [sys.executable, "-m", "toolpin", "wrap", "--yes"],
        capture_output=True, text=True, env=env, cwd=home, timeout=60, check=False,
    )  # fmt: skip
    assert wrap.returncode == 0, wrap.stderr
    entries = {
        client: json.loads(path.read_text())["mcpServers"]["demo"]
        for client, path in (
            ("desktop", home / ".config/Claude/claude_desktop_config.json"),
            ("cursor", home / ".cursor/mcp.json"),
        )
    }
    assert entries["desktop"]["args"][:3] == ["run", "--name", "demo@claude-desktop"]
    assert entries["cursor"]["args"][:3] == ["run", "--name", "demo@cursor"]
    # each client's server runs, is pinned on first use, and runs again unchanged, in
    # any order: before, the second client's other command was a change to review
    for _ in range(2):
        for entry in entries.values():
            answer = _list_tools([entry["command"], *entry["args"]], env)
            assert "error" not in answer, answer
    listed = subprocess.run(
        [sys.executable, "-m", "toolpin", "list", "--json"],
        capture_output=True, text=True, env=env, timeout=60, check=True,
    )  # fmt: skip
    pins = json.loads(listed.stdout)
    names = sorted(p["label"] for p in pins)
    assert names == ["demo@claude-desktop", "demo@cursor"]
