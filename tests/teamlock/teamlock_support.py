"""Helpers of the team-lock tests (the fixtures in ``conftest.py`` build on them).

A module of its own name, not ``conftest``, so test modules can import it whatever other
``conftest`` modules the session has loaded.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import queue
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).parents[2]
SRC = REPO / "src"
SERVERS = Path(__file__).parent / "servers"
RAW = SERVERS / "raw_server.py"
SDK = SERVERS / "sdk_server.py"
LOWLEVEL = SERVERS / "sdk_lowlevel.py"

EVERYTHING_PACKAGE = "@modelcontextprotocol/server-everything"
EVERYTHING_VERSION = "2026.8.31"
NPM_SERVERS = REPO / ".cache" / "npm-servers"

TOOLS = [
    {
        "name": "search",
        "description": "Search the notes.",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
    {"name": "count", "description": "Count the notes.", "inputSchema": {"type": "object"}},
]


# ----------------------------------------------------------------------------- servers


class Servers:
    """Writes raw-server spec files and gives their command lines."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def spec(self, key: str, /, **spec: Any) -> Path:
        spec.setdefault("tools", TOOLS)
        path = self.root / f"{key}.json"
        path.write_text(json.dumps(spec), encoding="utf-8")
        return path

    def command(self, key: str, /, **spec: Any) -> list[str]:
        """``[python, raw_server.py, <spec>]`` for a new spec ``name``."""
        return [sys.executable, str(RAW), str(self.spec(key, **spec))]

    def edit(self, key: str, /, **changes: Any) -> None:
        """Change the spec ``name`` in place (the command line stays the same)."""
        path = self.root / f"{key}.json"
        spec = json.loads(path.read_text(encoding="utf-8"))
        spec.update(changes)
        path.write_text(json.dumps(spec), encoding="utf-8")


# ----------------------------------------------------------------------------- project


@dataclass
class Result:
    code: int
    out: str
    err: str


@dataclass
class Project:
    """A project folder with a ``.mcp.json`` and the ways to run toolpin in it."""

    root: Path
    home: Path
    capsys: pytest.CaptureFixture[str]
    env: dict[str, str] = field(default_factory=dict)

    @property
    def config(self) -> Path:
        return self.root / ".mcp.json"

    @property
    def lock_path(self) -> Path:
        return self.root / "toolpin.lock"

    def write_config(self, servers: dict[str, Any], *, key: str = "mcpServers") -> None:
        self.config.write_text(json.dumps({key: servers}, indent=2) + "\n", encoding="utf-8")

    def toolpin(self, *args: str) -> Result:
        """``toolpin ARGS`` in-process, in the project folder (exit code and output)."""
        from toolpin.cli import main

        self.capsys.readouterr()
        here = Path.cwd()
        os.chdir(self.root)
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            os.chdir(here)
        captured = self.capsys.readouterr()
        return Result(code, captured.out, captured.err)

    def process_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.env)
        env["PYTHONPATH"] = str(SRC)
        env["TOOLPIN_HOME"] = str(self.home)
        env.pop("TOOLPIN_DEBUG", None)
        return env

    def start_proxy(self, *args: str, cwd: Path | None = None) -> Client:
        """``python -m toolpin run ARGS`` started the way a client starts a server."""
        proc = subprocess.Popen(
            [sys.executable, "-m", "toolpin", "run", *args],
            cwd=cwd or self.root,
            env=self.process_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        return Client(proc)


# ------------------------------------------------------------------------------ client


class Client:
    """The client side of a proxied server: JSON lines in, JSON lines out."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, id_: int, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def receive(self, id_: int, timeout: float = 30.0) -> dict[str, Any]:
        """The answer to request ``id_`` (notifications on the way are skipped); fails the
        test when none comes."""
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                self.close()
                pytest.fail(f"no answer from the proxy; stderr: {self.stderr.decode()!r}")
            if line is None:
                self.close()
                pytest.fail(f"the proxy closed its output; stderr: {self.stderr.decode()!r}")
            message: dict[str, Any] = json.loads(line)
            if "method" in message and "id" in message:
                self._answer(message)
            elif message.get("id") == id_:
                return message

    def _answer(self, request: dict[str, Any]) -> None:
        # A request from the server, as a client with roots and nothing to show answers it.
        if request["method"] == "roots/list":
            self.send({"jsonrpc": "2.0", "id": request["id"], "result": {"roots": []}})
        else:
            error = {"code": -32601, "message": "Method not found"}
            self.send({"jsonrpc": "2.0", "id": request["id"], "error": error})

    def initialize(self, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        self.request(
            1,
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities or {},
                "clientInfo": {"name": "test-client", "version": "1"},
            },
        )
        return self.receive(1)

    def close(self, *, terminate: bool = False) -> int:
        """Close the client's side and wait for the proxy; returns its exit code.

        ``terminate`` sends SIGTERM to the proxy first (which passes it to the server), as
        a client does when a server does not exit after its input closes."""
        if terminate:
            self.proc.terminate()
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()
        self.proc.stderr.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return code


# ---------------------------------------------------------------------- fake registries


def _load_registry_support() -> Any:
    path = REPO / "tests" / "packages" / "registry_support.py"
    spec = importlib.util.spec_from_file_location("toolpin_tests_registry_support", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FakeRegistry: Any = _load_registry_support().FakeRegistry

INTEGRITY_130 = "sha512-" + "N" * 86 + "=="
INTEGRITY_120 = "sha512-" + "M" * 86 + "=="
WHEEL_SHA = "4" * 64
SDIST_SHA = "5" * 64


def npm_doc(name: str, version: str, integrity: str) -> bytes:
    return json.dumps({"name": name, "version": version, "dist": {"integrity": integrity}}).encode()


_support = _load_registry_support()
SIMPLE_JSON: str = _support.SIMPLE_JSON
simple_page: Any = _support.simple_page


@dataclass
class Registries:
    npm: Any
    pypi: Any
    pypi_files: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)

    def serve_npm(self, name: str, version: str, integrity: str, *, latest: bool) -> None:
        quoted = name.replace("/", "%2F")
        body = npm_doc(name, version, integrity)
        self.npm.routes[f"/{quoted}/{version}"] = (200, body)
        if latest:
            self.npm.routes[f"/{quoted}/latest"] = (200, body)

    def serve_pypi(self, name: str, version: str, files: dict[str, str]) -> None:
        """Add (or replace) one release on the index's simple page of ``name`` (the index
        serves the simple API only; its newest release is the highest version)."""
        releases = self.pypi_files.setdefault(name, {})
        releases[version] = files
        every = {f: h for release in releases.values() for f, h in release.items()}
        self.pypi.routes[f"/simple/{name}/"] = (200, simple_page(name, every), SIMPLE_JSON)


# ----------------------------------------------------------------------- fake runners

RUNNER_SCRIPT = """#!{python}
# A stand-in for npx / uvx: records the package spec it was asked to run, then runs the
# local raw server configured for that package (by exact spec first, then by name).
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
conf = json.load(open(os.path.join(here, "runners.json"), encoding="utf-8"))
args = sys.argv[1:]
spec = next(a for a in args if not a.startswith("-"))
for flag in ("--from", "--package", "-p"):
    if flag in args:
        spec = args[args.index(flag) + 1]
runner = os.path.basename(sys.argv[0])
with open(conf["record"], "a", encoding="utf-8") as fh:
    fh.write(json.dumps({{"runner": runner, "args": args, "spec": spec}}) + "\\n")
name = spec
for sep in ("==", "@"):
    if sep in spec[1:]:
        name = spec[: spec.index(sep, 1)]
server = conf["servers"].get(spec) or conf["servers"][name]
os.execv(sys.executable, [sys.executable, {raw!r}, server])
"""


@dataclass
class FakeRunners:
    bin: Path
    record: Path
    conf: Path

    def serve(self, spec: str, server_spec: Path) -> None:
        """``npx`` / ``uvx`` run the raw server ``server_spec`` for ``spec`` (name or name@v)."""
        conf = json.loads(self.conf.read_text(encoding="utf-8"))
        conf["servers"][spec] = str(server_spec)
        self.conf.write_text(json.dumps(conf), encoding="utf-8")

    def runs(self) -> list[dict[str, Any]]:
        """Every start recorded: ``{"runner", "args", "spec"}``."""
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def specs(self) -> list[str]:
        return [run["spec"] for run in self.runs()]


# ---------------------------------------------------------- the real reference server


def install_everything() -> Path | None:
    """Install server-everything once into .cache/npm-servers (see ``tests.shared``)."""
    from tests.shared import npm_install

    binary = NPM_SERVERS / "node_modules" / ".bin" / "mcp-server-everything"
    if npm_install(NPM_SERVERS, EVERYTHING_PACKAGE, EVERYTHING_VERSION) or not binary.exists():
        return None
    return binary


def entry(argv: list[str], **extra: Any) -> dict[str, Any]:
    """A config entry (``command`` + ``args``) for ``argv``."""
    return {"command": argv[0], "args": argv[1:], **extra}
