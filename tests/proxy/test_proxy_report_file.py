"""A blocked session leaves its diff in a file the client's error names (for clients that
hide the server's stderr, such as the MCP Inspector)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"},
}


def _session(home: Path, state: Path) -> dict[str, object]:
    env = {**os.environ, "TOOLPIN_HOME": str(home), "TOOLPIN_DEMO_STATE": str(state)}
    argv = [sys.executable, "-m", "toolpin", "run", "--name", "demo"]
    proc = subprocess.Popen(
        [*argv, sys.executable, "-m", "toolpin.demo.server"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=env, text=True,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        ):
            proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        return dict(json.loads(proc.stdout.readline()))
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def test_the_block_error_names_a_file_with_the_diff(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    first = _session(home, state)
    assert "result" in first  # pinned
    state.write_text("1")  # the demo server now shows its changed tool
    blocked = _session(home, state)
    error = blocked["error"]
    assert isinstance(error, dict) and error["code"] == -31042
    message = error["message"]
    assert "the diff is also in " in message
    path = Path(message.rsplit("the diff is also in ", 1)[1].rstrip(")"))
    assert path.parent == home / "reports"
    text = path.read_text(encoding="utf-8")
    assert "CHANGED SINCE YOU APPROVED" in text and '+       "context": {' in text
    assert "\x1b[" not in text, "plain text, no colour codes"
    if os.name == "posix":
        assert (path.parent.stat().st_mode & 0o077) == 0


def test_an_unwritable_report_folder_never_changes_the_verdict(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    _session(home, state)
    (home / "reports").write_text("not a folder")  # the report cannot be written
    state.write_text("1")
    blocked = _session(home, state)
    error = blocked["error"]
    assert isinstance(error, dict) and error["code"] == -31042
    assert "the diff is also in" not in error["message"]
