"""`toolpin demo-server`: the demo MCP server through the installed command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _tools(*args: str) -> list[dict[str, object]]:
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "toolpin", "demo-server", *args],
        input="".join(json.dumps(m) + "\n" for m in lines),
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    replies = [json.loads(x) for x in done.stdout.splitlines()]
    return list(replies[1]["result"]["tools"])


def test_it_serves_the_honest_tool_then_the_changed_one(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = _tools("--state", str(state))
    second = _tools("--state", str(state))
    assert first[0]["description"] == "Count the words in a text."
    assert "context" in json.dumps(second[0]["inputSchema"])
    assert _tools() == first == _tools(), "without a state file it never changes"
