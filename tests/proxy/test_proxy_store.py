"""The pin store under real processes: concurrent pins, SIGKILL mid-write, fail-closed
corruption, permissions, and the store commands."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.proxy.harness import SRC, Proxy, Scripted, run_cli, tool

TOOLS = [tool("alpha", "A."), tool("beta", "B.")]


def session(proxy: Proxy) -> None:
    proxy.initialize()
    proxy.call("tools/list")


def test_sixteen_proxies_of_one_server_pin_once(toolpin_home: Path, tmp_path: Path) -> None:
    server = Scripted(tmp_path / "one", tools=TOOLS)
    proxies = [Proxy(toolpin_home, server.argv) for _ in range(16)]
    try:
        for proxy in proxies:  # every proxy is verifying before any finishes
            proxy.request(
                "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}, id_=1
            )
        for proxy in proxies:
            assert proxy.recv()["id"] == 1
            assert proxy.call("tools/list")["result"]["tools"] == TOOLS
        codes = [proxy.close() for proxy in proxies]
    finally:
        for proxy in proxies:
            proxy.kill()
    assert codes == [0] * 16
    assert sum("pinned" in p.stderr for p in proxies) == 1
    assert sum("unchanged" in p.stderr for p in proxies) == 15
    assert len(list((toolpin_home / "pins").glob("*.json"))) == 1
    events = [json.loads(x)["event"] for x in (toolpin_home / "audit.log").read_text().splitlines()]
    assert events == ["pin"]
    verify = run_cli(toolpin_home, "verify")
    assert verify.returncode == 0
    assert verify.stdout.strip() == "audit log ok, 1 entry, chain intact"


def test_sixteen_servers_pin_at_once(toolpin_home: Path, tmp_path: Path) -> None:
    servers = [Scripted(tmp_path / f"s{i}", tools=[tool(f"t{i}")]) for i in range(16)]
    proxies = [Proxy(toolpin_home, s.argv) for s in servers]
    try:
        for proxy in proxies:
            proxy.request(
                "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}, id_=1
            )
        for proxy in proxies:
            assert proxy.recv()["id"] == 1
        codes = [proxy.close() for proxy in proxies]
    finally:
        for proxy in proxies:
            proxy.kill()
    assert codes == [0] * 16
    assert len(list((toolpin_home / "pins").glob("*.json"))) == 16
    lines = (toolpin_home / "audit.log").read_text().splitlines()
    entries = [json.loads(x) for x in lines]
    assert [e["event"] for e in entries] == ["pin"] * 16
    assert [e["seq"] for e in entries] == list(range(16))
    assert len({e["server"] for e in entries}) == 16
    assert run_cli(toolpin_home, "verify").returncode == 0
    rows = json.loads(run_cli(toolpin_home, "list", "--json").stdout)
    assert len(rows) == 16


WRITER = r"""
import sys
from pathlib import Path
from toolpin.core.snapshot import Kind, Listing, Snapshot
from toolpin.pins.store import PinRecord, PinStore
from toolpin.pins import audit

SID = "0123456789abcdef"
store = PinStore(Path(sys.argv[1]))
store.ensure()
big = "x" * 200_000
snaps = []
for n in range(2):
    raw = [{"name": f"t{i}", "description": f"{n} {big}"} for i in range(8)]
    tools = Listing.parse(Kind.TOOL, raw)
    snaps.append(Snapshot(tools=tools, instructions=None, instructions_known=True))
i = 0
while True:
    if i == 1:
        print("ready", flush=True)  # one pin is on disk; every later write replaces it
    record = PinRecord(id=SID, label=f"w{i}", pinned_at="t", snapshot=snaps[i % 2])
    store._write(record)
    audit.append(store.audit_path, "pin", {"server": "0123456789abcdef", "n": i})
    i += 1
"""


def test_sigkill_during_writes_leaves_a_readable_store(tmp_path: Path) -> None:
    sys.path.insert(0, str(SRC))
    from toolpin.pins.audit import verify_chain
    from toolpin.pins.store import PinStore

    home = tmp_path / "home"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    for delay in (0.05, 0.13, 0.21, 0.37, 0.5):
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(home)], stdout=subprocess.PIPE, env=env
        )
        assert child.stdout is not None
        assert child.stdout.readline() == b"ready\n"
        time.sleep(delay)  # lands somewhere inside a write; never asserted on
        child.send_signal(signal.SIGKILL)
        child.wait()
        store = PinStore(home)
        record = store.load("0123456789abcdef")
        assert record is not None
        assert record.snapshot.tools is not None and len(record.snapshot.tools) == 8
        assert verify_chain(store.audit_path).ok
    leftovers = [p.name for p in (home / "pins").iterdir() if p.name.endswith(".tmp")]
    # A killed writer may leave its temporary file; it is never read as a pin.
    assert all(name.startswith(".0123456789abcdef.json.") for name in leftovers)
    assert [r.id for r in PinStore(home).all() if not isinstance(r, tuple)] == ["0123456789abcdef"]


def test_corrupt_pin_stops_the_proxy(toolpin_home: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    server = Scripted(tmp_path / "srv", tools=TOOLS)
    first = Proxy(toolpin_home, server.argv)
    session(first)
    assert first.close() == 0
    (pin,) = (toolpin_home / "pins").glob("*.json")
    pin.write_bytes(b'{"toolpinPin": 1, "truncated')
    before = pin.read_bytes()
    server.update(pid_file=str(pid_file))
    proxy = Proxy(toolpin_home, server.argv, "--name", "files")
    reply = proxy.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert reply["error"]["code"] == -31043
    assert reply["error"]["data"]["reason"] == "refused"
    assert reply["error"]["data"]["server"] == pin.stem
    assert "could not read its pin store" in reply["error"]["message"]
    assert proxy.call("tools/list")["error"]["code"] == -31043
    assert proxy.close() == 2
    assert "corrupt pin store" in proxy.stderr
    assert not pid_file.exists()  # the server was never started
    assert pin.read_bytes() == before  # and the pin was not rewritten
    shown = run_cli(toolpin_home, "show", pin.stem)
    assert shown.returncode == 2
    listed = json.loads(run_cli(toolpin_home, "list", "--json").stdout)
    assert listed[0]["id"] == pin.stem and "error" in listed[0]


def test_store_permissions(toolpin_home: Path, tmp_path: Path) -> None:
    server = Scripted(tmp_path / "srv", tools=TOOLS)
    proxy = Proxy(toolpin_home, server.argv)
    session(proxy)
    assert proxy.close() == 0
    for directory in (toolpin_home, toolpin_home / "pins"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    files = [p for p in toolpin_home.rglob("*") if p.is_file()]
    assert {p.name.rsplit(".", 1)[-1] for p in files} >= {"json", "log", "lock"}
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_list_show_forget(toolpin_home: Path, tmp_path: Path) -> None:
    assert run_cli(toolpin_home, "list").stdout.strip() == "no pinned servers yet"
    server = Scripted(tmp_path / "srv", tools=TOOLS, instructions="Hi.")
    proxy = Proxy(toolpin_home, server.argv, "--name", "my server")
    session(proxy)
    assert proxy.close() == 0
    rows = json.loads(run_cli(toolpin_home, "list", "--json").stdout)
    assert len(rows) == 1
    row = rows[0]
    assert row["label"] == "my server"
    assert row["counts"]["tools"] == 2
    assert row["pending"] is None
    assert len(row["surface_hash"]) == 64
    text = run_cli(toolpin_home, "list").stdout
    assert row["id"] in text and "my server" in text
    shown = json.loads(run_cli(toolpin_home, "show", row["id"], "--json").stdout)
    assert [item["key"] for item in shown["tools"]["items"]] == ["alpha", "beta"]
    assert shown["server"]["name"] == "scripted"
    human = run_cli(toolpin_home, "show", row["id"]).stdout
    assert "alpha" in human and "server instructions" in human
    nothing = run_cli(toolpin_home, "review", row["id"])
    assert nothing.stdout.strip() == "nothing pending for my server"
    none = run_cli(toolpin_home, "approve", row["id"])
    assert none.returncode == 1
    forgot = run_cli(toolpin_home, "forget", row["id"])
    assert forgot.returncode == 0
    assert run_cli(toolpin_home, "list").stdout.strip() == "no pinned servers yet"
    events = [json.loads(x)["event"] for x in (toolpin_home / "audit.log").read_text().splitlines()]
    assert events == ["pin", "forget"]
    again = Proxy(toolpin_home, server.argv, "--name", "my server")
    session(again)
    assert again.close() == 0
    assert "pinned" in again.stderr


@pytest.mark.parametrize("command", ["show", "review", "approve", "forget"])
@pytest.mark.parametrize("bad", ["zzz", "0123456789abcdef", "../../etc/passwd", "ABCDEF0123456789"])
def test_unknown_or_malformed_ids_exit_2_with_one_line(
    toolpin_home: Path, command: str, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolpin.cli import main

    with pytest.raises(SystemExit) as done:
        main([command, bad])
    assert done.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("toolpin: ")


def test_tampered_but_well_formed_pin_is_refused(toolpin_home: Path, tmp_path: Path) -> None:
    server = Scripted(tmp_path / "srv", tools=TOOLS)
    first = Proxy(toolpin_home, server.argv)
    session(first)
    assert first.close() == 0
    (pin,) = (toolpin_home / "pins").glob("*.json")
    # Passes the light check before the spawn, fails the full one (a hash no longer
    # matches its definition): the server is stopped before anything reaches it.
    tampered = pin.read_bytes().replace(b'"A."', b'"A. And more."')
    assert tampered != pin.read_bytes()
    pin.write_bytes(tampered)
    server.clear_logs()
    proxy = Proxy(toolpin_home, server.argv)
    reply = proxy.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert reply["error"]["code"] == -31043
    assert proxy.close() == 2
    assert server.received() == []
    assert pin.read_bytes() == tampered
