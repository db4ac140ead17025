"""Reading a shared config: ``${VAR}`` the way clients fill it, ids, cwd, skipped entries."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from teamlock_support import Project, Servers, entry

from toolpin.clients.config import expand, project_dir, read_config
from toolpin.errors import ConfigError
from toolpin.pins.serverid import server_id

ENV = {"HOME_DIR": "/home/ada", "EMPTY": "", "TOKEN": "s3cret"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${HOME_DIR}/notes", "/home/ada/notes"),
        ("${UNSET}", ""),
        ("${UNSET:-fallback}", "fallback"),
        ("${EMPTY:-fallback}", "fallback"),
        ("${EMPTY}", ""),
        ("${TOKEN:-unused}", "s3cret"),
        ("${env:TOKEN}", "s3cret"),
        ("${env:UNSET}", ""),
        ("${input:api_key}", "${input:api_key}"),
        ("$TOKEN", "$TOKEN"),
        ("${TOKEN", "${TOKEN"),
        ("${1BAD}", "${1BAD}"),
        ("a${TOKEN}b${HOME_DIR}c", "as3cretb/home/adac"),
        ("${UNSET:-}", ""),
        ("${UNSET:-a b/c}", "a b/c"),
    ],
)
def test_expand(text: str, expected: str) -> None:
    assert expand(text, ENV) == expected


def test_expand_predefined_client_variables_win() -> None:
    assert (
        expand("${workspaceFolder}/x", {"workspaceFolder": "env"}, {"workspaceFolder": "/p"})
        == "/p/x"
    )
    assert (
        expand("${env:workspaceFolder}", {"workspaceFolder": "env"}, {"workspaceFolder": "/p"})
        == "env"
    )


def test_variables_in_command_args_env_and_cwd(tmp_path: Path) -> None:
    config = tmp_path / ".mcp.json"
    (tmp_path / "data").mkdir()
    written = ["${PY}", "server.py", "--root", "${ROOT:-/srv}", "--key=${env:KEY}", "${input:x}"]
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "notes": {
                        "command": written[0],
                        "args": written[1:],
                        "env": {"API_KEY": "${KEY}", "MODE": "${MODE:-fast}", "N": 3},
                        "cwd": "${SUB:-data}",
                    }
                }
            }
        )
    )
    one = read_config(config, environ={"PY": "/usr/bin/python3", "KEY": "k1"})
    two = read_config(
        config, environ={"PY": "python3.12", "KEY": "k2", "ROOT": "/r", "SUB": "/abs"}
    )

    first, second = one.servers[0], two.servers[0]
    assert first.argv == (
        "/usr/bin/python3",
        "server.py",
        "--root",
        "/srv",
        "--key=k1",
        "${input:x}",
    )
    assert first.env == {"API_KEY": "k1", "MODE": "fast", "N": "3"}
    assert first.cwd == str(tmp_path / "data")
    assert second.argv[0] == "python3.12" and second.argv[3] == "/r"
    assert second.cwd == "/abs"
    # The id is computed from the command as written, identical on every machine.
    assert first.written == tuple(written)
    assert first.server_id == second.server_id == server_id(written)


def test_servers_start_in_the_project_directory(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    (project / ".vscode").mkdir(parents=True)
    (project / "tools").mkdir()
    plain = project / ".mcp.json"
    plain.write_text(json.dumps({"mcpServers": {"a": {"command": "node", "args": ["a.js"]}}}))
    vscode = project / ".vscode" / "mcp.json"
    vscode.write_text(
        "// VS Code\n"
        + json.dumps(
            {
                "servers": {
                    "b": {"command": "node", "args": ["${workspaceFolder}/b.js"], "cwd": "tools"},
                }
            }
        )
    )
    assert project_dir(plain) == project.absolute()
    assert project_dir(vscode) == project.absolute()
    assert read_config(plain, environ={}).servers[0].cwd == str(project.absolute())
    b = read_config(vscode, environ={}).servers[0]
    assert b.cwd == str(project.absolute() / "tools")
    assert b.argv == ("node", f"{project.absolute()}/b.js")
    assert b.written == ("node", "${workspaceFolder}/b.js")


def test_skipped_entries(tmp_path: Path) -> None:
    config = tmp_path / ".mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "off": {"command": "node", "args": ["x.js"], "disabled": True},
                    "off2": {"command": "node", "args": ["y.js"], "enabled": False},
                    "on": {"command": "node", "args": ["z.js"], "enabled": True},
                    "web": {"type": "http", "url": "https://example.invalid/mcp"},
                    "broken": {"args": ["no command"]},
                    "wrapped": {
                        "command": "/opt/bin/toolpin",
                        "args": ["run", "--name", "wrapped", "--", "node", "w.js"],
                    },
                }
            }
        )
    )
    read = read_config(config, environ={})
    assert [s.name for s in read.servers] == ["on", "wrapped"]
    assert read.servers[1].written == ("node", "w.js")
    assert read.servers[1].server_id == server_id(["node", "w.js"])
    reasons = dict(read.skipped)
    assert reasons["off"] == reasons["off2"] == "disabled in the config"
    assert reasons["web"].startswith("remote server")
    assert "broken" in reasons


def test_codex_toml_config(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '# team servers\n[mcp_servers.notes]\ncommand = "node"\nargs = ["${DIR:-.}/n.js"]\n'
        '[mcp_servers.notes.env]\nTOKEN = "${TOKEN}"\n'
    )
    server = read_config(config, environ={"TOKEN": "t"}).servers[0]
    assert server.argv == ("node", "./n.js")
    assert server.env == {"TOKEN": "t"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "cannot read"),
        ('{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}', "repeated member"),
        ('{"other": 1}', "lists no MCP servers"),
        ("[1, 2]", "cannot read"),
    ],
)
def test_unusable_configs(tmp_path: Path, content: str, message: str) -> None:
    config = tmp_path / ".mcp.json"
    config.write_text(content)
    with pytest.raises(ConfigError, match=message):
        read_config(config, environ={})


def test_lock_and_check_with_variables_from_two_machines(
    project: Project, servers: Servers, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen = tmp_path / "seen.json"
    spec = servers.spec("notes", env_out=str(seen), env_names=["NOTES_TOKEN"])
    project.write_config(
        {
            "notes": entry(
                ["${PYTHON}", "${SERVER_DIR}/raw_server.py", str(spec)],
                env={"NOTES_TOKEN": "${NOTES_TOKEN:-none}"},
            )
        }
    )
    raw_dir = str(Path(servers.command("x")[1]).parent)
    monkeypatch.setenv("PYTHON", sys.executable)
    monkeypatch.setenv("SERVER_DIR", raw_dir)
    monkeypatch.setenv("NOTES_TOKEN", "machine-one")
    assert project.toolpin("lock").code == 0
    assert json.loads(seen.read_text())["env"] == {"NOTES_TOKEN": "machine-one"}
    locked_id = json.loads(project.lock_path.read_text())["servers"]["notes"]["id"]
    assert locked_id == server_id(["${PYTHON}", "${SERVER_DIR}/raw_server.py", str(spec)])

    monkeypatch.delenv("NOTES_TOKEN")  # the other machine: no token, the default applies
    result = project.toolpin("lock", "--check")
    assert result.code == 0, result.out
    assert json.loads(seen.read_text())["env"] == {"NOTES_TOKEN": "none"}
    assert json.loads(seen.read_text())["cwd"] == str(project.root)
