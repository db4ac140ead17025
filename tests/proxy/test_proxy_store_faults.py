"""Every fault of the pin store fails closed, cleanly: -31043 naming the store, one clear
line on stderr, the server stopped, exit 2. Faults are injected into each store call on
each path (start, first pin, a drift at connect, a drift mid-session)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.proxy.harness import Proxy, Scripted, alive, proxy_env, run_cli, tool

UNVERIFIED = -31043
FAULTS = Path(__file__).resolve().parent / "faults"
APPROVED = [tool("search", "Search the web.")]
CHANGED = [tool("search", "Search the web, and more.")]


class FaultEnv:
    def __init__(self, tmp: Path, home: Path) -> None:
        self.tmp = tmp
        self.home = home
        self.procs: list[Proxy] = []

    def proxy(self, server: Scripted, fault: str | None) -> Proxy:
        env = proxy_env(self.home)
        env["PYTHONPATH"] = str(FAULTS) + os.pathsep + env["PYTHONPATH"]
        if fault is not None:
            env["TOOLPIN_TEST_FAULT"] = fault
        proxy = Proxy(self.home, server.argv, "--name", "stored", env=env)
        self.procs.append(proxy)
        return proxy

    def pinned(self, **config: Any) -> Scripted:
        server = Scripted(
            self.tmp / "srv", tools=APPROVED, pid_file=str(self.tmp / "pid"), **config
        )
        proxy = self.proxy(server, None)
        proxy.initialize()
        proxy.call("tools/list")
        assert proxy.close() == 0, proxy.stderr
        return server


@pytest.fixture
def fenv(tmp_path: Path, toolpin_home: Path) -> Iterator[FaultEnv]:
    env = FaultEnv(tmp_path, toolpin_home)
    yield env
    for proxy in env.procs:
        proxy.kill()


def assert_store_error(reply: Any) -> None:
    assert reply["error"]["code"] == UNVERIFIED, reply
    assert "pin store" in reply["error"]["message"]
    assert "in time" not in reply["error"]["message"]


def assert_one_clear_line(stderr: str, kind: str) -> None:
    assert "Traceback" not in stderr
    lines = [x for x in stderr.splitlines() if "pin store" in x]
    assert len(lines) == 1, stderr
    line = lines[0]
    assert "forget" not in line  # never advised for a good pin
    if kind == "EACCES":
        assert "Permission denied" in line and "corrupt" not in line
    if kind == "EROFS":
        assert "Read-only file system" in line


KINDS = ["EACCES", "EROFS", "ValueError", "RuntimeError"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("method", ["pin_first", "lock", "_audit", "_write"])
def test_fault_at_the_first_pin(fenv: FaultEnv, method: str, kind: str) -> None:
    server = Scripted(fenv.tmp / "srv", tools=APPROVED, pid_file=str(fenv.tmp / "pid"))
    proxy = fenv.proxy(server, f"{method}:{kind}")
    init = proxy.request(
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}},
    )
    listing = proxy.request("tools/list")
    first, second = proxy.recv(), proxy.recv()
    assert first["id"] == init and second["id"] == listing
    assert_store_error(first)
    assert_store_error(second)
    later = proxy.call("ping")  # blocked at connect: every later request is answered too
    assert_store_error(later)
    assert proxy.close() == 2
    assert_one_clear_line(proxy.stderr, kind)
    assert not alive(int((fenv.tmp / "pid").read_text()))
    assert json.loads(run_cli(fenv.home, "list", "--json").stdout) == []  # nothing half-pinned


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("method", ["record_drift", "lock", "_audit", "_write"])
def test_fault_recording_a_drift_at_connect(fenv: FaultEnv, method: str, kind: str) -> None:
    server = fenv.pinned()
    server.update(tools=CHANGED)
    proxy = fenv.proxy(server, f"{method}:{kind}")
    reply = proxy.call(
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}},
    )
    assert_store_error(reply)
    assert proxy.close() == 2
    assert_one_clear_line(proxy.stderr, kind)
    assert "DEFINITIONS CHANGED" in proxy.stderr  # the diff is still shown
    assert not alive(int((fenv.tmp / "pid").read_text()))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("method", ["record_drift", "_write"])
def test_fault_recording_a_drift_mid_session(fenv: FaultEnv, method: str, kind: str) -> None:
    server = fenv.pinned(after_flip={"tools": CHANGED})
    proxy = fenv.proxy(server, f"{method}:{kind}")
    proxy.initialize()
    assert "result" in proxy.call("tools/call", {"name": "flip", "arguments": {}})
    id_ = proxy.request("tools/list")
    while True:
        reply = proxy.recv()
        if reply.get("id") == id_:
            break
    assert_store_error(reply)
    assert proxy.wait() == 2
    assert_one_clear_line(proxy.stderr, kind)
    assert not alive(int((fenv.tmp / "pid").read_text()))


@pytest.mark.parametrize("kind", KINDS)
def test_fault_reading_the_store_at_start(fenv: FaultEnv, kind: str) -> None:
    server = fenv.pinned()
    proxy = fenv.proxy(server, f"load:{kind}")
    reply = proxy.call(
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}},
    )
    assert reply["error"]["code"] == UNVERIFIED
    assert "pin store" in reply["error"]["message"]
    assert proxy.close() == 2
    assert "Traceback" not in proxy.stderr
    if kind == "EACCES":
        assert "corrupt" not in proxy.stderr and "forget" not in proxy.stderr


def _deepen(path: Path, depth: int) -> None:
    """Nest a member ``depth`` levels deep into a pin file, keeping its digest intact."""
    import hashlib

    from toolpin.lockfile.native import _ZERO_DIGEST, _tail, bytes_intact

    data = path.read_bytes()
    cut = data.rindex(b',\n  "digest"')
    body = b'{\n  "deep": ' + b"[" * depth + b"]" * depth + b"," + data[1:cut]
    digest = hashlib.sha256(body + _tail(_ZERO_DIGEST)).hexdigest()
    path.write_bytes(body + _tail(f"sha256:{digest}"))
    assert bytes_intact(path.read_bytes())


def test_a_pin_nested_100000_deep_affects_only_its_server(
    tmp_path: Path, toolpin_home: Path
) -> None:
    servers = {}
    for name in ("good", "deep"):
        server = Scripted(tmp_path / name, tools=[tool(name)])
        proxy = Proxy(toolpin_home, server.argv, "--name", name)
        proxy.initialize()
        proxy.call("tools/list")
        assert proxy.close() == 0, proxy.stderr
        servers[name] = server
    listed = {
        x["label"]: x["id"] for x in json.loads(run_cli(toolpin_home, "list", "--json").stdout)
    }
    _deepen(toolpin_home / "pins" / f"{listed['deep']}.json", 100_000)

    done = run_cli(toolpin_home, "list")
    assert done.returncode == 0, done.stderr
    assert "good" in done.stdout
    assert f"{listed['deep']}  UNREADABLE" in done.stdout
    assert "nested too deeply" in done.stdout
    as_json = json.loads(run_cli(toolpin_home, "list", "--json").stdout)
    assert {x["id"] for x in as_json} == set(listed.values())
    assert run_cli(toolpin_home, "show", listed["good"]).returncode == 0
    shown = run_cli(toolpin_home, "show", listed["deep"])
    assert shown.returncode == 2 and "Traceback" not in shown.stderr

    deep = Proxy(toolpin_home, servers["deep"].argv, "--name", "deep")
    reply = deep.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert reply["error"]["code"] == UNVERIFIED
    assert deep.close() == 2
    assert "Traceback" not in deep.stderr and "nested too deeply" in deep.stderr
    good = Proxy(toolpin_home, servers["good"].argv, "--name", "good")
    good.initialize()
    assert good.call("tools/list")["result"]["tools"] == [tool("good")]
    assert good.close() == 0
