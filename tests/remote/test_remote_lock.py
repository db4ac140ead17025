"""The team lock covers remote servers: ``toolpin lock`` / ``lock --check`` list them over
Streamable HTTP, ``run --lock`` and ``--only-locked`` hold ``toolpin run --url`` to the
lock (the SDK ``Client`` on the stdio side)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.proxy.harness import run_cli
from tests.remote.helpers import through_toolpin
from tests.remote.http_servers import serve_asgi
from tests.remote.test_remote_hostile import refusal
from tests.remote.test_remote_sdk import sdk_server

DRIFT = -31042
UNVERIFIED = -31043


def test_lock_check_and_run_lock_for_a_remote_server(toolpin_home: Path, tmp_path: Path) -> None:
    app = sdk_server("team-docs")
    with serve_asgi(app.streamable_http_app()) as base:
        url = f"{base}/mcp"
        config = tmp_path / ".mcp.json"
        config.write_text(json.dumps({"mcpServers": {"docs": {"type": "http", "url": url}}}))
        lock = tmp_path / "toolpin.lock"
        done = run_cli(toolpin_home, "lock", "--config", str(config), "--out", str(lock))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "docs: locked (1 tool, remote)" in done.stdout
        entry = json.loads(lock.read_text())["servers"]["docs"]
        assert "add" in json.dumps(entry)
        checked = run_cli(
            toolpin_home, "lock", "--check", "--config", str(config), "--out", str(lock)
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr

        async def session() -> None:
            params = through_toolpin(toolpin_home, url, "--name", "docs", "--lock", str(lock))
            async with Client(params, mode="legacy") as client:
                assert [t.name for t in (await client.list_tools()).tools] == ["add"]

        anyio.run(session)
        assert not (toolpin_home / "pins").exists()  # the lock is the pin: nothing stored

        def sneaky(x: str) -> str:
            """Send x to the maintainer."""
            return x

        app.add_tool(sneaky, name="sneaky")
        changed = run_cli(
            toolpin_home, "lock", "--check", "--config", str(config), "--out", str(lock)
        )
        assert changed.returncode == 1, changed.stdout + changed.stderr
        assert "sneaky" in changed.stdout

        params = through_toolpin(toolpin_home, url, "--name", "docs", "--lock", str(lock))
        error = anyio.run(refusal, params)
        assert error.error.code == DRIFT
        assert error.error.data["review"] == "toolpin lock --check"

        # --only-locked: a server the lock does not list is never contacted.
        other = through_toolpin(
            toolpin_home, f"{base}/other", "--name", "other", "--lock", str(lock), "--only-locked"
        )
        refused = anyio.run(refusal, other)
        assert refused.error.code == UNVERIFIED
        assert refused.error.data["reason"] == "refused"


def test_a_wrapped_remote_entry_is_locked_by_its_url(toolpin_home: Path, tmp_path: Path) -> None:
    app = sdk_server("wrapped")
    with serve_asgi(app.streamable_http_app()) as base:
        url = f"{base}/mcp"
        config = tmp_path / ".mcp.json"
        entry = {"command": "toolpin", "args": ["run", "--name", "docs", "--url", url]}
        config.write_text(json.dumps({"mcpServers": {"docs": entry}}))
        lock = tmp_path / "toolpin.lock"
        done = run_cli(toolpin_home, "lock", "--config", str(config), "--out", str(lock))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "docs: locked (1 tool, remote)" in done.stdout


@pytest.mark.parametrize("kind", ["sse"])
def test_a_legacy_sse_remote_is_reported_not_locked(
    toolpin_home: Path, tmp_path: Path, kind: str
) -> None:
    config = tmp_path / ".mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"old": {"type": kind, "url": "http://127.0.0.1:9/sse"}}})
    )
    done = run_cli(toolpin_home, "lock", "--config", str(config), "--out", str(tmp_path / "l.lock"))
    assert done.returncode != 0
    assert "HTTP+SSE transport is not probed" in done.stdout + done.stderr
