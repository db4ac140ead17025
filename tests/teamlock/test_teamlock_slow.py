"""Slow servers are waited for: ``lock``, ``lock --check`` and ``run --lock`` in both eras.

A server that takes more than ten seconds to answer (``uvx`` on a cold cache) used to be
sent ``initialize`` on the connection it was about to answer ``server/discover`` on, and was
recorded as refusing the handshake. Here servers answer after 11 s (past that old fixed
limit) and after ``--timeout`` - 1 s: a 2026-07-28 server (the SDK's ``MCPServer``) and a
handshake-era one (answers ``server/discover`` with "method not found"), listed side by side.
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from teamlock_support import SDK, Client, Project, Servers, entry

pytestmark = pytest.mark.slow

CASES = [
    pytest.param(11.0, 60.0, id="answers-after-11s"),
    pytest.param(13.0, 14.0, id="answers-after-timeout-minus-1s"),
]
SDK_ANSWER = 1.0
"""Seconds the SDK server takes to answer and list once it reads its input (imports of
the first request, under load); it starts that much earlier to answer at the same time."""


def slow_config(project: Project, servers: Servers, delay: float) -> dict[str, list[str]]:
    texts = servers.root / "sdk.json"
    texts.write_text(json.dumps({"start_delay": delay - SDK_ANSWER}), encoding="utf-8")
    argvs = {
        "modern": [sys.executable, str(SDK), str(texts)],
        "legacy": servers.command("legacy", discover="error", strict=True, start_delay=delay),
    }
    project.write_config({name: entry(argv) for name, argv in argvs.items()})
    return argvs


def opening(client: Client, era: str, wait: float) -> dict[str, Any]:
    if era == "legacy":
        client.request(
            1,
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "test-client", "version": "1"},
            },
        )
        answer = client.receive(1, timeout=wait)
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test-client", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    client.request(1, "server/discover", {"_meta": meta})
    return client.receive(1, timeout=wait)


def listed_tools(client: Client, era: str, wait: float) -> list[str]:
    params = None
    if era == "modern":
        params = {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        }
    client.request(2, "tools/list", params)
    answer = client.receive(2, timeout=wait)
    assert "result" in answer, answer
    return sorted(t["name"] for t in answer["result"]["tools"])


@pytest.mark.parametrize(("delay", "timeout"), CASES)
def test_slow_servers_are_locked_checked_and_run(
    project: Project, servers: Servers, delay: float, timeout: float
) -> None:
    argvs = slow_config(project, servers, delay)

    locked = project.toolpin("lock", "--timeout", f"{timeout:g}")
    assert locked.code == 0, locked.out + locked.err
    assert "modern: locked (1 tool)" in locked.out
    assert "legacy: locked (2 tools)" in locked.out
    assert "refused" not in locked.out

    checked = project.toolpin("lock", "--check", "--timeout", f"{timeout:g}")
    assert checked.code == 0, checked.out + checked.err
    assert "All 2 servers match" in checked.out

    def run(era: str) -> tuple[dict[str, Any], list[str], int, bytes]:
        client = project.start_proxy(
            "--name", era, "--lock", "toolpin.lock", "--timeout", f"{timeout:g}", "--", *argvs[era]
        )
        answer = opening(client, era, wait=timeout + 10)
        tools = listed_tools(client, era, wait=10) if "result" in answer else []
        code = client.close()
        return answer, tools, code, client.stderr

    with ThreadPoolExecutor(max_workers=2) as pool:
        (modern, modern_tools, modern_code, modern_err), (legacy, legacy_tools, legacy_code, _) = (
            pool.map(run, ["modern", "legacy"])
        )
    assert "result" in modern, (modern, modern_err)
    assert modern_tools == ["add"]
    assert "result" in legacy, legacy
    assert legacy_tools == ["count", "search"]
    assert (modern_code, legacy_code) == (0, 0)


def test_a_server_slower_than_the_timeout_fails_with_the_reason(
    project: Project, servers: Servers, tmp_path: Path
) -> None:
    argv = servers.command("late", start_delay=4)
    project.write_config({"late": entry(argv)})
    result = project.toolpin("lock", "--timeout", "2")
    assert result.code == 1
    assert "late: the server did not answer within 2s" in result.out
