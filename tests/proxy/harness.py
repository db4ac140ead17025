"""Drive ``python -m toolpin run`` as a client would: raw JSON-RPC lines on its pipes."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.proxy.readers import assert_readers_agree

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
SERVERS = REPO / "tests" / "servers"
SCRIPTED = SERVERS / "scripted.py"
WAIT = 20.0  # generous upper bound for one answer; never a timing assertion


def proxy_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a proxy process: ``src`` on the path, a private store."""
    env = dict(os.environ)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + path if path else "")
    env["TOOLPIN_HOME"] = str(home)
    env.pop("NO_COLOR", None)
    env.pop("TOOLPIN_COLOR", None)
    env.update(extra)
    return env


def toolpin_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "toolpin", *args]


def run_cli(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """Run a ``toolpin`` command to completion."""
    return subprocess.run(
        toolpin_argv(*args),
        capture_output=True,
        text=True,
        env=proxy_env(home, **extra),
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def dumps(message: Any) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


class Scripted:
    """A scripted server (``tests/servers/scripted.py``) and its configuration file."""

    def __init__(self, directory: Path, **config: Any) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.path = directory / "server.json"
        self.recv_log = directory / "recv.log"
        self.sent_log = directory / "sent.log"
        self.config: dict[str, Any] = {
            "recv_log": str(self.recv_log),
            "sent_log": str(self.sent_log),
        }
        self.update(**config)

    def update(self, **config: Any) -> None:
        self.config.update(config)
        self.path.write_text(json.dumps(self.config), encoding="utf-8")

    @property
    def argv(self) -> list[str]:
        return [sys.executable, str(SCRIPTED), str(self.path)]

    def received(self) -> list[bytes]:
        """Every line the server received, raw."""
        if not self.recv_log.exists():
            return []
        return self.recv_log.read_bytes().splitlines(keepends=True)

    def received_json(self) -> list[Any]:
        out = []
        for line in self.received():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append(line)
        return out

    def sent(self) -> list[bytes]:
        if not self.sent_log.exists():
            return []
        return self.sent_log.read_bytes().splitlines(keepends=True)

    def calls(self) -> list[Any]:
        """The ``tools/call`` requests that reached the server."""
        return [
            m
            for m in self.received_json()
            if isinstance(m, dict) and m.get("method") == "tools/call"
        ]

    def clear_logs(self) -> None:
        for path in (self.recv_log, self.sent_log):
            if path.exists():
                path.unlink()


def tool(name: str, description: str = "", **extra: Any) -> dict[str, Any]:
    """A tool definition."""
    out: dict[str, Any] = {
        "name": name,
        "description": description or f"The {name} tool.",
        "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
    }
    out.update(extra)
    return out


class Proxy:
    """One ``toolpin run`` process with reader threads on its stdout and stderr."""

    def __init__(
        self,
        home: Path,
        server_argv: Sequence[str],
        *options: str,
        env: dict[str, str] | None = None,
    ) -> None:
        argv = toolpin_argv("run", *options, "--", *server_argv)
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env if env is not None else proxy_env(home),
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.received: list[bytes] = []
        self.raw_out = bytearray()
        """Every byte the proxy wrote to its client."""
        self.check_readers = True
        """Whether :meth:`wait` checks that every client reader reads the output alike."""
        self._stderr = bytearray()
        self._out = threading.Thread(target=self._read_out, daemon=True)
        self._err = threading.Thread(target=self._read_err, daemon=True)
        self._out.start()
        self._err.start()
        self._next_id = 0

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        buffer = b""
        while True:
            data = os.read(fd, 1 << 16)
            if not data:
                break
            self.raw_out.extend(data)
            buffer += data
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                self.lines.put(line + b"\n")
        if buffer:
            self.lines.put(buffer)
        self.lines.put(None)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        fd = self.proc.stderr.fileno()
        while True:
            data = os.read(fd, 1 << 16)
            if not data:
                break
            self._stderr.extend(data)

    # ------------------------------------------------------------------------------ send

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_raw(dumps(message))

    def request(self, method: str, params: Any = None, id_: Any = None) -> Any:
        """Send a request; returns its id."""
        if id_ is None:
            self._next_id += 1
            id_ = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return id_

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    # ------------------------------------------------------------------------------ read

    def recv_raw(self, timeout: float = WAIT) -> bytes:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"no line from the proxy within {timeout}s; stderr:\n{self.stderr}"
            ) from None
        if line is None:
            self.lines.put(None)
            raise AssertionError(f"the proxy closed its stdout; stderr:\n{self.stderr}")
        self.received.append(line)
        return line

    def recv(self, timeout: float = WAIT) -> Any:
        return json.loads(self.recv_raw(timeout))

    def call(self, method: str, params: Any = None) -> Any:
        """Send a request and return the next line (which must answer it)."""
        id_ = self.request(method, params)
        reply = self.recv()
        assert reply.get("id") == id_, reply
        return reply

    def initialize(self, protocol: str = "2025-11-25") -> Any:
        """The legacy handshake; returns the initialize answer."""
        reply = self.call(
            "initialize",
            {
                "protocolVersion": protocol,
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "0"},
            },
        )
        self.notify("notifications/initialized")
        return reply

    def rest(self) -> list[bytes]:
        """Every line still to come, until the proxy closes its stdout."""
        out = []
        while True:
            line = self.lines.get(timeout=WAIT)
            if line is None:
                self.lines.put(None)
                return out
            self.received.append(line)
            out.append(line)

    # ----------------------------------------------------------------------------- close

    def close(self, timeout: float = 30.0) -> int:
        """Close the proxy's stdin (the client hangs up) and wait for its exit code."""
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        return self.wait(timeout)

    def wait(self, timeout: float = 30.0) -> int:
        code = self.proc.wait(timeout=timeout)
        self._out.join(timeout=10)
        self._err.join(timeout=10)
        if self.check_readers:
            # Differential: Python, Node and a Go-style stream decoder read every line
            # the proxy forwarded as the same single message.
            assert_readers_agree(bytes(self.raw_out))
        return code

    @property
    def stderr(self) -> str:
        return self._stderr.decode("utf-8", "replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def children_of(pid: int) -> list[int]:
    """Live child processes of ``pid`` (from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry.name))
    return out


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
