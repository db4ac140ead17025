"""``toolpin wrap`` / ``unwrap`` as a user runs them: a fake home, real files, a subprocess."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolpin.lockfile.native import render_lock

SRC = Path(__file__).parents[2] / "src"
GOLDEN = Path(__file__).parents[1] / "golden" / "clients" / "input"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with configs of Claude Desktop, Claude Code, VS Code (JSONC) and Codex."""
    h = tmp_path / "home"
    (h / ".config" / "Claude").mkdir(parents=True)
    shutil.copy(
        GOLDEN / "claude_desktop_config.json", h / ".config/Claude/claude_desktop_config.json"
    )
    shutil.copy(GOLDEN / "claude.json", h / ".claude.json")
    (h / ".config" / "Code" / "User").mkdir(parents=True)
    shutil.copy(GOLDEN / "vscode_mcp.json", h / ".config/Code/User/mcp.json")
    (h / ".codex").mkdir()
    shutil.copy(GOLDEN / "codex_config.toml", h / ".codex/config.toml")
    return h


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def launcher_dir(tmp_path: Path) -> Path:
    """A directory with an executable ``toolpin`` that runs this checkout."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "toolpin"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(SRC)!r})\n"
        "from toolpin.cli import main\nmain()\n"
    )
    script.chmod(0o755)
    return bin_dir


def run(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        "HOME": str(home),
        "PATH": f"{launcher_dir(home.parent)}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(SRC),
        "TOOLPIN_HOME": str(home.parent / "toolpin-home"),
        "NO_COLOR": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "toolpin", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or home,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_no_config_found(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run(empty, "wrap")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("No MCP config found for Claude Desktop, Claude Code, Cursor")
    assert "GitHub Copilot CLI." in proc.stdout
    assert "toolpin wrap --config <file>" in proc.stdout


def test_plan_without_yes_writes_nothing(home: Path) -> None:
    before = snapshot(home)
    proc = run(home, "wrap")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"Claude Desktop  {home}/.config/Claude/claude_desktop_config.json" in out
    assert "  + protect    filesystem\n" in out
    assert "@modelcontextprotocol/server-filesystem, newest version: not pinned" in out
    assert "    remote: remote server: add --remote to protect it" in out
    assert "  + protect    db  (project /home/me/work/app)" in out
    assert "  + protect    time zone\n" in out
    assert out.rstrip().endswith("Nothing written. Run again with --yes to apply.")
    assert snapshot(home) == before
    dry = run(home, "wrap", "--dry-run", "--yes")
    assert dry.stdout.rstrip().endswith("Dry run: nothing written.")
    assert snapshot(home) == before


def test_wrap_yes_then_again_then_unwrap(home: Path) -> None:
    before = snapshot(home)
    proc = run(home, "wrap", "--yes")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("  wrote  ") == 4
    assert "Undo any time with: toolpin unwrap" in proc.stdout
    backups = home.parent / "toolpin-home" / "backups"
    assert len(list(backups.iterdir())) == 4
    desktop = json.loads((home / ".config/Claude/claude_desktop_config.json").read_text())
    fs = desktop["mcpServers"]["filesystem"]
    # The launcher is the user's installed toolpin (this test's stand-in on PATH), never the
    # checkout's own .venv, which breaks when the checkout moves.
    assert fs["command"] == str((home.parent / "bin" / "toolpin").absolute())
    # No "--": the server command's first word ends toolpin's options (the MCP Inspector's
    # config mode misreads a "--" argument).
    assert fs["args"][:4] == ["run", "--name", "filesystem@claude-desktop", "npx"]
    after_wrap = snapshot(home)

    again = run(home, "wrap", "--yes")
    assert "Nothing to change: every local server found is already protected." in again.stdout
    assert snapshot(home) == after_wrap

    undo = run(home, "unwrap", "--yes")
    assert undo.returncode == 0, undo.stderr
    assert "  - unprotect  filesystem" in undo.stdout
    assert "Your pins stay in place" in undo.stdout
    assert snapshot(home) == before
    assert "Nothing to unwrap." in run(home, "unwrap", "--yes").stdout


def test_launcher_uvx(home: Path) -> None:
    from toolpin import __version__

    # toolpin is not on a package index yet: uvx cannot start it, so the launcher is refused
    proc = run(home, "wrap", "--yes", "--launcher", "uvx", "--config", str(home / ".claude.json"))
    assert proc.returncode == 2
    assert "the launcher `" in proc.stderr and "--force" in proc.stderr
    assert (home / ".claude.json").read_bytes() == (GOLDEN / "claude.json").read_bytes()
    proc = run(
        home,
        "wrap",
        "--yes",
        "--force",
        "--launcher",
        "uvx",
        "--config",
        str(home / ".claude.json"),
    )
    assert proc.returncode == 0, proc.stderr
    everything = json.loads((home / ".claude.json").read_text())["mcpServers"]["everything"]
    assert Path(everything["command"]).name in ("uvx", "uvx.exe")
    assert everything["args"][:3] == [f"toolpin@{__version__}", "run", "--name"]
    assert run(home, "unwrap", "--yes", "--config", str(home / ".claude.json")).returncode == 0
    assert (home / ".claude.json").read_bytes() == (GOLDEN / "claude.json").read_bytes()


def test_lock_needs_project_and_a_lock(home: Path, tmp_path: Path) -> None:
    proc = run(home, "wrap", "--lock", "toolpin.lock")
    assert proc.returncode == 2
    assert "--lock is for the project's shared .mcp.json: add --project." in proc.stderr
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(GOLDEN / "claude_desktop_config.json", project / ".mcp.json")
    missing = run(home, "wrap", "--project", "--lock", "toolpin.lock", "--yes", cwd=project)
    assert missing.returncode == 2
    assert "toolpin: cannot use toolpin.lock (not found)" in missing.stderr
    assert "Write it first with: toolpin lock" in missing.stderr
    (project / "toolpin.lock").write_text('{"lockfileVersion": 1, "servers": {}}')
    other = run(home, "wrap", "--project", "--lock", "toolpin.lock", "--yes", cwd=project)
    assert other.returncode == 2
    assert "toolpin: cannot use toolpin.lock (" in other.stderr
    assert "not a toolpin lockfile" in other.stderr
    (project / "toolpin.lock").write_bytes(render_lock({}))
    ok = run(home, "wrap", "--project", "--lock", "toolpin.lock", "--yes", cwd=project)
    assert ok.returncode == 0, ok.stderr
    shared = json.loads((project / ".mcp.json").read_text())["mcpServers"]["fetch"]
    assert shared["args"][:2] == ["run", "--name"]
    assert shared["args"][3:6] == ["--lock", "toolpin.lock", "uvx"]
    # a project's entry is named by its project too, so no other project shares its pin
    assert re.fullmatch(r"fetch@claude-code:project-[0-9a-f]{8}", shared["args"][2])
    user = json.loads((home / ".config/Claude/claude_desktop_config.json").read_text())
    assert "--lock" not in user["mcpServers"]["fetch"]["args"]


def test_unsafe_names_are_shown_visibly(tmp_path: Path) -> None:
    h = tmp_path / "home"
    h.mkdir()
    config = h / "odd.json"
    config.write_text(json.dumps({"mcpServers": {"ok\u001b[2J\u202e": {"command": "node"}}}))
    proc = run(h, "wrap", "--config", str(config))
    assert "ok\\u{1b}[2J\\u{202e}" in proc.stdout
    assert "\u001b" not in proc.stdout and "\u202e" not in proc.stdout


def test_broken_config_is_reported_not_touched(tmp_path: Path) -> None:
    h = tmp_path / "home"
    (h / ".cursor").mkdir(parents=True)
    (h / ".cursor" / "mcp.json").write_text('{"mcpServers": {"a": {"command": "x",,}}}')
    before = snapshot(h)
    proc = run(h, "wrap", "--yes")
    assert proc.returncode == 2, proc.stderr
    assert "not valid JSON (line 1, column" in proc.stdout
    assert "Nothing else to change; the files above are left as they are." in proc.stdout
    assert "edit it by hand" in proc.stdout
    assert snapshot(h) == before


def test_missing_explicit_config(tmp_path: Path) -> None:
    h = tmp_path / "home"
    h.mkdir()
    proc = run(h, "unwrap", "--config", str(h / "nope.json"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("toolpin: cannot read ")


def _wrap_on_a_terminal(home: Path, answer: bytes) -> tuple[int, str]:
    """``toolpin wrap`` with a pseudo-terminal as stdin, answering its question."""
    import pty

    env = {
        "HOME": str(home),
        "PATH": f"{launcher_dir(home.parent)}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(SRC),
        "TOOLPIN_HOME": str(home.parent / "toolpin-home"),
        "NO_COLOR": "1",
    }
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "toolpin", "wrap"],
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=home,
        )
        os.write(master, answer)
        out, _err = proc.communicate(timeout=60)
    finally:
        os.close(master)
        os.close(slave)
    return proc.returncode, out.decode()


def test_on_a_terminal_wrap_asks_and_applies_only_on_yes(home: Path) -> None:
    before = snapshot(home)
    # The first questions are about the three remote servers (wrap --remote protects them).
    code, out = _wrap_on_a_terminal(home, b"n\nn\nn\nn\n")
    assert code == 0
    assert "Also protect the remote server" in out
    # the plan comes first, so each question is asked with the whole picture in view
    assert out.index("  + protect    filesystem") < out.index("Also protect the remote server")
    assert "Protect" in out and "[y/N]" in out
    assert out.rstrip().endswith("Nothing written.")
    assert snapshot(home) == before

    code, out = _wrap_on_a_terminal(home, b"n\nn\nn\ny\n")
    assert code == 0, out
    assert "wrote" in out
    desktop = json.loads((home / ".config/Claude/claude_desktop_config.json").read_text())
    assert desktop["mcpServers"]["filesystem"]["args"][0] == "run"


def test_on_a_terminal_a_remote_server_chosen_is_wrapped_too(home: Path) -> None:
    code, out = _wrap_on_a_terminal(home, b"y\nn\nn\ny\n")
    assert code == 0, out
    assert "With the remote servers you chose:" in out
    desktop = json.loads((home / ".config/Claude/claude_desktop_config.json").read_text())
    remote = desktop["mcpServers"]["remote"]
    assert remote["args"][:4] == ["run", "--name", "remote@claude-desktop", "--url"]


@pytest.mark.parametrize("text", ['{"mcpServers": {}}', '{"theme": "dark"}', "{}"])
@pytest.mark.parametrize("command", ["wrap", "unwrap"])
def test_a_named_config_without_servers_says_so_as_lock_does(
    tmp_path: Path, command: str, text: str
) -> None:
    h = tmp_path / "home"
    h.mkdir()
    config = h / "empty.json"
    config.write_text(text)
    locked = run(h, "lock", "--config", str(config))
    force = ["--force"] if command == "wrap" else []
    proc = run(h, command, "--config", str(config), "--yes", *force)
    assert proc.returncode == locked.returncode == 2, (proc, locked)
    line = f"toolpin: {config} lists no MCP servers (mcpServers or servers)\n"
    assert proc.stderr == locked.stderr == line
    assert proc.stdout == ""
    assert config.read_text() == text


@pytest.mark.parametrize("command", ["wrap", "unwrap"])
def test_one_named_config_without_servers_beside_one_with(tmp_path: Path, command: str) -> None:
    h = tmp_path / "home"
    h.mkdir()
    empty, full = h / "empty.json", h / "full.json"
    empty.write_text('{"mcpServers": {}}')
    full.write_text('{"mcpServers": {"a": {"command": "python3", "args": ["-V"]}}}')
    force = ["--force"] if command == "wrap" else []
    proc = run(h, command, "--config", str(full), "--config", str(empty), "--dry-run", *force)
    assert proc.returncode == 2, proc
    assert proc.stderr.count("lists no MCP servers") == 1 and str(empty) in proc.stderr
    if command == "wrap":
        assert "+ protect    a" in proc.stdout
    assert "already protected" not in proc.stdout


def test_known_configs_without_servers(tmp_path: Path) -> None:
    h = tmp_path / "home"
    (h / ".cursor").mkdir(parents=True)
    (h / ".cursor" / "mcp.json").write_text('{"mcpServers": {}}')
    proc = run(h, "wrap")
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout == f"No MCP servers listed in {h / '.cursor' / 'mcp.json'}: nothing to wrap.\n"
    )
    assert "already protected" not in proc.stdout


def test_only_remote_servers_are_not_called_protected(tmp_path: Path) -> None:
    h = tmp_path / "home"
    h.mkdir()
    config = h / "remote.json"
    config.write_text('{"mcpServers": {"r": {"url": "https://example.com/mcp"}}}')
    proc = run(h, "wrap", "--config", str(config), "--force")
    assert proc.returncode == 0, proc
    assert "r: remote server: add --remote to protect it" in proc.stdout
    assert "already protected" not in proc.stdout
    assert "Nothing to change: the servers above are left as they are" in proc.stdout
