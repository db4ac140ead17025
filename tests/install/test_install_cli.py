"""``toolpin install-links``: text, --json (terminal-safe) and --client output, exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.install.decoders import decode
from toolpin.cli import _register_commands, cli
from toolpin.clients.launcher import installed_launcher


def _run(*args: str) -> tuple[int, str, str]:
    _register_commands()
    result = CliRunner().invoke(cli, ["install-links", *args])
    return result.exit_code, result.stdout, result.stderr


def _proc(*args: str) -> subprocess.CompletedProcess[str]:
    """``toolpin install-links ARGS`` as a user runs it (errors go through ``main``)."""
    return subprocess.run(
        [sys.executable, "-m", "toolpin", "install-links", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_json_is_ascii_and_decodes_to_the_proxied_command() -> None:
    code, out, _ = _run("--json", "--name", "files", "--", "npx", "-y", "srv", "dir é")
    assert code == 0
    assert out.isascii()
    doc = json.loads(out)
    toolpin = installed_launcher().argv[0]
    assert os.path.isabs(toolpin)  # desktop apps do not read the shell's PATH
    expected = [toolpin, "run", "--name", "files", "--", "npx", "-y", "srv", "dir é"]
    assert doc["command"] == expected
    for client, text in doc["outputs"].items():
        assert decode(client, text, "files") == expected


def test_one_client_prints_only_its_entry() -> None:
    code, out, _ = _run("--client", "codex", "--", "uvx", "mcp-server-time==0.6.2")
    assert code == 0
    assert out.startswith("[mcp_servers.mcp-server-time]\n")


def test_refused_input_exits_2_with_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolpin", "install-links", "--", "node", "a\nb"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("toolpin: argument 1 contains a control, newline")
    assert "Traceback" not in done.stderr


def test_unknown_client_and_missing_command_are_usage_errors() -> None:
    assert _run("--client", "emacs", "--", "node", "x")[0] == 2
    assert _run("--")[0] == 2


def test_claude_desktop_gets_an_absolute_path_by_default() -> None:
    code, out, _ = _run("--json", "--client", "claude-desktop", "--", "node", "srv.js")
    assert code == 0
    doc = json.loads(out)
    entry = json.loads(doc["outputs"]["claude-desktop"])["mcpServers"]["srv"]
    assert entry["command"] == installed_launcher().argv[0]
    assert "claude-desktop" not in doc["notes"]


def test_a_bare_toolpin_is_written_with_a_note_for_claude_desktop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The check runs `toolpin --version` as the client would: from PATH.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    code, out, _ = _run("--launcher", "toolpin", "--json", "--", "node", "srv.js")
    assert code == 0
    doc = json.loads(out)
    assert doc["command"][0] == "toolpin"
    assert "does not read your shell's PATH" in doc["notes"]["claude-desktop"]


def test_an_absolute_launcher_path_is_checked_and_used(tmp_path: Path) -> None:
    fake = tmp_path / "not-toolpin"
    fake.write_text("#!/bin/sh\necho something else\n", encoding="utf-8")
    fake.chmod(0o755)
    done = _proc("--launcher", str(fake), "--", "node", "srv.js")
    assert done.returncode == 2 and "does not start toolpin" in done.stderr
    code, out, _ = _run("--launcher", str(fake), "--force", "--json", "--", "node", "srv.js")
    assert code == 0 and json.loads(out)["command"][0] == str(fake)


def test_a_relative_launcher_is_refused() -> None:
    done = _proc("--launcher", "bin/toolpin", "--", "node", "srv.js")
    assert done.returncode == 2 and done.stdout == ""
    assert "is neither path, toolpin, uvx nor an absolute path" in done.stderr


def test_an_unpublished_uvx_launcher_is_refused_like_wrap_and_policy() -> None:
    done = _proc("--launcher", "uvx", "--", "node", "x")
    assert done.returncode == 2 and done.stdout == ""
    # Without uvx here the launcher cannot start at all; with it, uvx cannot fetch toolpin.
    why = "command not found" if shutil.which("uvx") is None else "not published on PyPI"
    assert why in done.stderr and "--force" in done.stderr
    assert "Traceback" not in done.stderr
