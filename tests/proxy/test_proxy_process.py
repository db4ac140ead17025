"""Process hygiene: stderr, signals, hang-ups, exit codes, orphans, the light import path."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.proxy.harness import SRC, Proxy, Scripted, alive, children_of, tool

TOOLS = [tool("alpha", "A.")]


def server_pid(pid_file: Path) -> int:
    for _ in range(400):
        if pid_file.exists() and pid_file.read_text():
            return int(pid_file.read_text())
        time.sleep(0.025)
    raise AssertionError("the server never wrote its pid")


def gone(pid: int) -> bool:
    for _ in range(400):  # wait up to 10 s for the process to disappear (not a timing test)
        if not alive(pid):
            return True
        time.sleep(0.025)
    return False


def started(toolpin_home: Path, tmp_path: Path, **config: object) -> tuple[Proxy, int]:
    pid_file = tmp_path / "server.pid"
    server = Scripted(tmp_path / "srv", tools=TOOLS, pid_file=str(pid_file), **config)
    proxy = Proxy(toolpin_home, server.argv)
    proxy.initialize()
    proxy.call("tools/list")
    return proxy, server_pid(pid_file)


def test_server_stderr_passes_through(toolpin_home: Path, tmp_path: Path) -> None:
    proxy, _pid = started(toolpin_home, tmp_path, stderr="hello from the server \u00e9")
    assert proxy.close() == 0
    assert "hello from the server \u00e9" in proxy.stderr


def test_closing_stdin_ends_the_server(toolpin_home: Path, tmp_path: Path) -> None:
    proxy, pid = started(toolpin_home, tmp_path)
    assert children_of(proxy.proc.pid) == [pid]
    assert proxy.close() == 0
    assert gone(pid)
    assert children_of(proxy.proc.pid) == []


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signals_are_forwarded(
    toolpin_home: Path, tmp_path: Path, signum: signal.Signals, code: int
) -> None:
    proxy, pid = started(toolpin_home, tmp_path)
    proxy.proc.send_signal(signum)
    assert proxy.wait() == code  # the server died of the signal; the proxy reports it
    assert gone(pid)


def test_proxy_killed_takes_the_server_with_it(toolpin_home: Path, tmp_path: Path) -> None:
    proxy, pid = started(toolpin_home, tmp_path)
    proxy.proc.send_signal(signal.SIGKILL)
    proxy.wait()
    assert gone(pid)


def test_server_exit_code_is_the_proxys(toolpin_home: Path, tmp_path: Path) -> None:
    proxy, pid = started(toolpin_home, tmp_path, exit_after_answer="tools/call")
    reply = proxy.call("tools/call", {"name": "alpha", "arguments": {}})
    assert reply["result"]["content"][0]["text"] == "called alpha"
    assert proxy.wait() == 4
    assert gone(pid)


def test_blocked_session_leaves_no_process(toolpin_home: Path, tmp_path: Path) -> None:
    proxy, _pid = started(toolpin_home, tmp_path)
    assert proxy.close() == 0
    pid_file = tmp_path / "server.pid"
    pid_file.unlink()
    server = Scripted(tmp_path / "srv", tools=[tool("alpha", "Changed.")], pid_file=str(pid_file))
    blocked = Proxy(toolpin_home, server.argv)
    reply = blocked.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert reply["error"]["code"] == -31042
    second = server_pid(pid_file)
    assert gone(second)  # the drifted server is stopped at once
    assert blocked.proc.poll() is None  # the proxy keeps answering until the client hangs up
    assert blocked.close() == 1


def test_spawn_failure_exits_127(toolpin_home: Path, tmp_path: Path) -> None:
    proxy = Proxy(toolpin_home, [str(tmp_path / "no-such-server"), "--token", "s3cret"])
    assert proxy.close() == 127
    assert "cannot start the server" in proxy.stderr
    assert "s3cret" not in proxy.stderr  # argv is never printed


def test_import_path_is_light() -> None:
    code = (
        "import sys, toolpin.__main__, toolpin.proxy.start, toolpin.proxy.relay\n"
        "import toolpin.pins.store\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules}"
        " & {'mcp', 'mcp_types', 'pydantic', 'rich', 'click', 'anyio', 'httpx2'})\n"
        "print(','.join(heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        check=True,
    )
    assert done.stdout.strip() == ""


def test_usage_errors_exit_2(toolpin_home: Path) -> None:
    from tests.proxy.harness import run_cli

    for args in (("run",), ("run", "--bogus", "--", "x"), ("run", "--timeout", "soon", "--", "x")):
        done = run_cli(toolpin_home, *args)
        assert done.returncode == 2, args
        assert "Traceback" not in done.stderr
