"""A committed, wrapped project config starts on a teammate's machine from any folder."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from toolpin.clients.locations import project_configs
from toolpin.clients.wrap import Launcher, apply, plan_wrap
from toolpin.team.run import find_lock, prepare_locked_run

AUTHOR = Launcher(("/home/author/checkout/.venv/bin/toolpin",))


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "src" / "deep").mkdir(parents=True)
    (project / ".vscode").mkdir()
    server = {"command": sys.executable, "args": ["-m", "toolpin.demo.server"]}
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"demo": server}}, indent=2))
    (project / ".vscode" / "mcp.json").write_text(
        json.dumps({"servers": {"demo": {"type": "stdio", **server}}}, indent=2)
    )
    return project


def _wrap(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    plan = plan_wrap(project_configs(project), launcher=AUTHOR, lock="toolpin.lock")
    apply(plan, home=project.parent / "toolpin-home")


def test_project_files_name_toolpin_on_path_and_the_lock_portably(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path)
    _wrap(project, monkeypatch)
    claude = json.loads((project / ".mcp.json").read_text())["mcpServers"]["demo"]
    vscode = json.loads((project / ".vscode" / "mcp.json").read_text())["servers"]["demo"]
    for entry in (claude, vscode):
        assert entry["command"] == "toolpin", "never the author's absolute path"
        assert str(tmp_path) not in json.dumps(entry["args"][:6])
    assert claude["args"][:5] == ["run", "--name", claude["args"][2], "--lock", "toolpin.lock"]
    assert vscode["args"][:5] == [
        "run",
        "--name",
        vscode["args"][2],
        "--lock",
        "${workspaceFolder}/toolpin.lock",
    ]
    # each client's entry has its own name, with the project's folder in it
    assert re.fullmatch(r"demo@claude-code:project-[0-9a-f]{8}", claude["args"][2])
    assert re.fullmatch(r"demo@vs-code:project-[0-9a-f]{8}", vscode["args"][2])
    assert claude["args"][2][-8:] == vscode["args"][2][-8:]


def test_find_lock_walks_up_to_the_project_root_and_no_further(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (tmp_path / "toolpin.lock").write_text("{}")  # outside the project: never picked up
    deep = project / "src" / "deep"
    assert find_lock("toolpin.lock", deep) == deep / "toolpin.lock"  # missing: reported there
    (project / "toolpin.lock").write_text("{}")
    assert find_lock("toolpin.lock", deep) == project / "toolpin.lock"
    assert find_lock("toolpin.lock", project) == project / "toolpin.lock"
    assert find_lock(str(tmp_path / "x.lock"), deep) == tmp_path / "x.lock"


def _talk(argv: list[str], cwd: Path, env: dict[str, str]) -> dict[str, object]:
    """Initialize, then list tools, as a client does; the answer to ``tools/list``."""
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}  # fmt: skip
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ):
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
        for line in proc.stdout:
            reply = json.loads(line)
            if reply.get("id") == 2:
                return dict(reply)
        raise AssertionError("no answer to tools/list")
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


@pytest.mark.parametrize("where", [".", "src", "src/deep"])
def test_a_wrapped_server_starts_from_any_folder_of_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    project = _project(tmp_path)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "TOOLPIN_HOME": str(tmp_path / "teammate-home"),
    }
    monkeypatch.chdir(project)
    subprocess.run(
        [sys.executable, "-m", "toolpin", "lock", "--definitions-only"],
        cwd=project, env=env, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    _wrap(project, monkeypatch)
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["demo"]
    tools = _talk([entry["command"], *entry["args"]], project / where, env)
    assert "error" not in tools, tools
    assert [t["name"] for t in tools["result"]["tools"]] == ["word_count"]  # type: ignore[index]


def test_the_lock_finds_a_wrapped_entry_by_its_config_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path)
    env = {**os.environ, "TOOLPIN_HOME": str(tmp_path / "home")}
    subprocess.run(
        [sys.executable, "-m", "toolpin", "lock", "--definitions-only"],
        cwd=project, env=env, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    _wrap(project, monkeypatch)
    args = json.loads((project / ".mcp.json").read_text())["mcpServers"]["demo"]["args"]
    name = args[2]
    assert name != "demo"
    # an edited command under the wrapped name is still the lock's "demo" (its change is
    # then checked against that entry), not a server the lock does not know
    locked = prepare_locked_run(
        "toolpin.lock", [sys.executable, "-X", "utf8", "-m", "toolpin.demo.server"],
        name=name, label=name,
    )  # fmt: skip
    assert locked is not None
    assert locked.source.describe_pin().endswith("(entry demo)")
    other = prepare_locked_run("toolpin.lock", ["node", "x.js"], name="other@cursor", label="o")
    assert other is None
