"""A wrapped entry started the way a client starts it reaches the real server.

The client's view: read ``command`` and ``args`` from the rewritten file and spawn them
with a GUI-like environment (a PATH without the user's tools), then speak MCP on stdio.
This needs ``toolpin run`` (the proxy); until it is registered the test is skipped.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from toolpin.cli import _register_commands, cli
from toolpin.clients.locations import ConfigLocation
from toolpin.clients.wrap import Launcher, apply, plan_wrap

SRC = Path(__file__).parents[2] / "src"

SERVER = r"""
import json, sys
TOOLS = [{"name": "echo", "description": "Echo the text back.",
          "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": "tiny-real-server", "version": "1.0.0"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""


def run_is_registered() -> bool:
    _register_commands()
    return "run" in cli.commands


@pytest.mark.skipif(
    not run_is_registered(), reason="toolpin run (the proxy) is not on this branch yet"
)
def test_wrapped_entry_reaches_the_real_server(tmp_path: Path) -> None:
    server = tmp_path / "server.py"
    server.write_text(SERVER)
    launcher = tmp_path / "toolpin"
    launcher.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(SRC)!r})\n"
        "from toolpin.cli import main\nmain()\n"
    )
    launcher.chmod(0o755)
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(
        json.dumps(
            {"mcpServers": {"tiny": {"command": sys.executable, "args": [str(server)]}}}, indent=2
        )
    )
    location = ConfigLocation("Claude Desktop", config, "mcpServers")
    apply(plan_wrap([location], launcher=Launcher((str(launcher),))), home=tmp_path / "home")

    entry = json.loads(config.read_text())["mcpServers"]["tiny"]
    assert entry["command"] == str(launcher)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TOOLPIN_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [entry["command"], *entry["args"]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def call(message: dict[str, object]) -> dict[str, object]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        assert isinstance(answer, dict)
        return answer

    try:
        init = call(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test-client", "version": "0"},
                },
            }
        )
        assert init["result"]["serverInfo"]["name"] == "tiny-real-server"  # type: ignore[index]
        proc.stdin.write(
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
        )
        listed = call({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        assert [t["name"] for t in listed["result"]["tools"]] == ["echo"]  # type: ignore[index]
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()
