"""``toolpin demo``: pin a server, then watch toolpin block it after it changes its tool.

Two sessions of the bundled :mod:`toolpin.demo.server` run through the real proxy
(``python -m toolpin run``), driven the way an MCP client drives it: JSON-RPC lines on its
pipes. Everything happens in a temporary directory (the pin store included) that is
deleted afterwards; the user's own pins are untouched. No network, and no tool is called.

:func:`run_demo` returns 0 when session 1 pinned and session 2 was blocked with error
-31042 and the labelled diff, 1 otherwise. Output goes through a callback.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import toolpin
from toolpin.core.render import Line, to_text, visible
from toolpin.demo.server import STATE_ENV

LABEL: Final = "demo-server"
WAIT: Final = 20.0


@dataclass(frozen=True)
class SessionResult:
    """What one proxied session showed."""

    exit_code: int
    stderr: str
    answer: dict[str, Any] | None
    tools: list[dict[str, Any]]


class DemoError(Exception):
    """The proxy did not behave as the demo expects (the demo then exits 1)."""


class _Client:
    """A minimal JSON-RPC client on the proxy's pipes."""

    def __init__(self, argv: list[str], env: dict[str, str], stderr_path: Path) -> None:
        self._stderr = stderr_path.open("wb")
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env
        )
        self._buffer = b""

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def answer(self, id_: int) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + WAIT
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if isinstance(message, dict) and message.get("id") == id_:
                    return message
            left = deadline - time.monotonic()
            if left <= 0:
                raise DemoError("the proxy did not answer in time")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                data = os.read(fd, 1 << 16)
                if not data:
                    raise DemoError("the proxy closed its output")
                self._buffer += data

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise DemoError("the proxy did not exit") from None
        finally:
            self._stderr.close()
        return code


def _session(argv: list[str], env: dict[str, str], work: Path, number: int) -> SessionResult:
    stderr_path = work / f"session-{number}.stderr"
    client = _Client(argv, env, stderr_path)
    try:
        client.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "toolpin-demo-client", "version": toolpin.__version__},
                },
            }
        )
        answer = client.answer(1)
        tools: list[dict[str, Any]] = []
        if "result" in answer:
            client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            client.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            listed = client.answer(2)
            result = listed.get("result")
            if isinstance(result, dict) and isinstance(result.get("tools"), list):
                tools = result["tools"]
        code = client.close()
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
    stderr = stderr_path.read_text(encoding="utf-8", errors="replace")
    return SessionResult(exit_code=code, stderr=stderr, answer=answer, tools=tools)


def _indent(text: str, prefix: str = "  ") -> list[str]:
    return [prefix + line if line else "" for line in text.rstrip("\n").split("\n")]


def run_demo(echo: Callable[[str], None], *, color: bool = False, keep: bool = False) -> int:
    """Run the demonstration; returns 0 when toolpin blocked the changed server.

    The demo's pin store is a temporary folder, deleted at the end unless ``keep``: then
    it stays, and the closing lines say how to run ``review`` and ``approve`` on it.
    """
    work = Path(tempfile.mkdtemp(prefix="toolpin-demo-"))
    try:
        return _run(work, echo, color, keep)
    except (DemoError, OSError) as exc:
        echo(f"toolpin demo: unexpected outcome ({exc}). Please open an issue.")
        return 1
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def _closing(work: Path, server_id: str, keep: bool) -> list[Line]:
    """What the review and approve commands shown above apply to, and how to try them."""
    if not keep:
        return [
            Line(
                "The review and approve commands and the report file above belong to the "
                "demo's temporary pin store, deleted now; your own pins are untouched."
            ),
            Line("To try them yourself, keep the store:  toolpin demo --keep", "dim"),
        ]
    home = shlex.quote(str(work / "home"))
    return [
        Line(f"The demo's pin store is kept in {visible(str(work))}; your own pins are untouched."),
        Line("Try the commands above on it (it is yours to delete afterwards):"),
        Line(f"  TOOLPIN_HOME={visible(home)} toolpin review {server_id}", "header"),
        Line(f"  TOOLPIN_HOME={visible(home)} toolpin approve {server_id}", "header"),
        Line(f"  rm -rf {visible(shlex.quote(str(work)))}", "dim"),
    ]


def _run(work: Path, echo: Callable[[str], None], color: bool, keep: bool) -> int:
    def show(lines: list[Line]) -> None:
        echo(to_text(lines, color=color))

    package_root = str(Path(toolpin.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = package_root + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
    )
    env["TOOLPIN_HOME"] = str(work / "home")
    env[STATE_ENV] = str(work / "server-state")
    if color:
        env["TOOLPIN_COLOR"] = "1"
    server = [sys.executable, "-m", "toolpin.demo.server"]
    argv = [sys.executable, "-m", "toolpin", "run", "--name", LABEL, "--", *server]

    show(
        [
            Line("toolpin demo: a server changes its tool after you approved it", "header"),
            Line("(a temporary pin store, no network, and no tool is ever called)", "dim"),
            Line(""),
            Line("Session 1: a client connects to the server through toolpin", "header"),
            Line(f"  $ toolpin run --name {LABEL} -- python -m toolpin.demo.server", "dim"),
        ]
    )
    first = _session(argv, env, work, 1)
    echo("\n".join(_indent(first.stderr)))
    if first.exit_code != 0 or "pinned" not in first.stderr or not first.tools:
        raise DemoError(f"session 1 ended with exit code {first.exit_code}")
    for tool in first.tools:
        description = visible(str(tool.get("description", "")))
        show([Line(f"  the client sees {visible(str(tool.get('name')))}: {description}", "good")])
    show(
        [
            Line(""),
            Line("Session 2: the server now shows a changed tool", "header"),
        ]
    )
    second = _session(argv, env, work, 2)
    error = (second.answer or {}).get("error")
    blocked = (
        second.exit_code == 1
        and isinstance(error, dict)
        and error.get("code") == -31042
        and "CHANGED" in second.stderr
        and not second.tools
    )
    if not blocked:
        raise DemoError(f"session 2 was not blocked (exit code {second.exit_code})")
    echo("\n".join(_indent(second.stderr)))
    assert isinstance(error, dict)
    show(
        [
            Line(""),
            Line(f"  The client received JSON-RPC error {error['code']}:"),
            Line(f"    {visible(str(error.get('message', '')))}", "dim"),
            Line(f"    data: {json.dumps(error.get('data'), ensure_ascii=False)}", "dim"),
            Line(""),
            Line(
                "Blocked: the changed tool never reached the model, and nothing the client "
                "queued was forwarded.",
                "good",
            ),
            *_closing(work, str((error.get("data") or {}).get("server", "ID")), keep),
            Line(""),
            Line("Protect a server of your own: put toolpin in front of it in your client config:"),
            Line("  toolpin run --name NAME -- <your server command> [args...]", "header"),
        ]
    )
    return 0
