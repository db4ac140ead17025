"""``toolpin install-links``: text, --json (terminal-safe) and --client output, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from tests.install.decoders import decode
from toolpin.cli import _register_commands, cli


def _run(*args: str) -> tuple[int, str, str]:
    _register_commands()
    result = CliRunner().invoke(cli, ["install-links", *args])
    return result.exit_code, result.stdout, result.stderr


def test_json_is_ascii_and_decodes_to_the_proxied_command() -> None:
    code, out, _ = _run("--json", "--name", "files", "--", "npx", "-y", "srv", "dir é")
    assert code == 0
    assert out.isascii()
    doc = json.loads(out)
    expected = ["toolpin", "run", "--name", "files", "--", "npx", "-y", "srv", "dir é"]
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
