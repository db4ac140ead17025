"""A hand-edited audit log (a middle or the last line, still valid JSON) is never
extended: ``toolpin run`` answers -31043 naming ``toolpin verify --repair`` where it
would pin, reports a change as a change that could not be saved, lets an unchanged
server through (it writes nothing); ``approve`` and ``forget`` exit 2 with one line;
``verify`` exits 1; ``verify --repair`` keeps the broken file and makes the chain verify
again, after which everything works."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.proxy.harness import Proxy, Scripted, run_cli, tool

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}


def _ids(home: Path) -> dict[str, str]:
    return {x["label"]: x["id"] for x in json.loads(run_cli(home, "list", "--json").stdout)}


def _connect(home: Path, server: Scripted, name: str) -> tuple[Any, Any, int, str]:
    proxy = Proxy(home, server.argv, "--name", name)
    first = proxy.call("initialize", INIT)
    listing = proxy.call("tools/list") if "result" in first else None
    code = proxy.close()
    return first, listing, code, proxy.stderr


def _edit(log: Path, line: int) -> None:
    lines = log.read_bytes().split(b"\n")
    entry = json.loads(lines[line - 1])
    entry["label"] = "renamed by hand"
    lines[line - 1] = json.dumps(entry, separators=(",", ":")).encode()
    log.write_bytes(b"\n".join(lines))


@pytest.mark.parametrize("where", ["middle", "last"])
def test_a_broken_chain_refuses_every_write_until_repaired(
    toolpin_home: Path, tmp_path: Path, where: str
) -> None:
    servers = {n: Scripted(tmp_path / n, tools=[tool(n, f"The {n} tool.")]) for n in "abc"}
    for name in ("a", "b"):
        _, listing, code, _ = _connect(toolpin_home, servers[name], name)
        assert code == 0 and listing["result"]["tools"]
    servers["b"].update(tools=[tool("b", "The b tool, changed.")])
    first, _, code, _ = _connect(toolpin_home, servers["b"], "b")
    assert first["error"]["code"] == -31042 and first["error"]["data"]["review_saved"] is True
    ids = _ids(toolpin_home)
    log = toolpin_home / "audit.log"
    lines = log.read_text().splitlines()
    assert [json.loads(x)["event"] for x in lines] == ["pin", "pin", "drift"]
    _edit(log, 2 if where == "middle" else len(lines))
    broken = log.read_bytes()
    pins = {p.name: p.read_bytes() for p in (toolpin_home / "pins").glob("*.json")}

    # run: a first pin would extend the chain -> -31043 naming the repair
    first, _, code, stderr = _connect(toolpin_home, servers["c"], "c")
    assert first["error"]["code"] == -31043 and code == 2
    assert "toolpin verify --repair" in first["error"]["message"]
    assert "audit log" in first["error"]["message"]
    assert "is broken" in stderr and "Traceback" not in stderr
    assert "c" not in _ids(toolpin_home)
    # an unchanged server writes nothing and still runs
    _, listing, code, _ = _connect(toolpin_home, servers["a"], "a")
    assert code == 0 and listing["result"]["tools"][0]["name"] == "a"
    # a change is still reported as one, with the reason it could not be recorded
    servers["a"].update(tools=[tool("a", "The a tool, changed.")])
    first, _, code, stderr = _connect(toolpin_home, servers["a"], "a")
    assert first["error"]["code"] == -31042 and first["error"]["data"]["review_saved"] is False
    assert "toolpin verify --repair" in first["error"]["message"].split("\n")[1]
    servers["a"].update(tools=[tool("a", "The a tool.")])

    for args in (("approve", ids["b"]), ("forget", ids["a"])):
        done = run_cli(toolpin_home, *args)
        assert done.returncode == 2, done
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert "is broken" in done.stderr and "toolpin verify --repair" in done.stderr
    assert log.read_bytes() == broken  # never extended
    assert {p.name: p.read_bytes() for p in (toolpin_home / "pins").glob("*.json")} == pins

    verify = run_cli(toolpin_home, "verify")
    assert verify.returncode == 1 and "BROKEN" in verify.stderr
    assert "toolpin verify --repair" in verify.stderr

    repaired = run_cli(toolpin_home, "verify", "--repair")
    assert repaired.returncode == 0, repaired.stderr
    kept = list(toolpin_home.glob("audit.log.broken-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == broken
    assert kept[0].name in repaired.stdout
    ok = run_cli(toolpin_home, "verify")
    assert ok.returncode == 0 and "chain intact" in ok.stdout
    assert run_cli(toolpin_home, "verify", "--repair").stdout.endswith("nothing to repair\n")

    assert run_cli(toolpin_home, "approve", ids["b"]).returncode == 0
    assert run_cli(toolpin_home, "forget", ids["a"]).returncode == 0
    _, listing, code, _ = _connect(toolpin_home, servers["c"], "c")
    assert code == 0 and listing["result"]["tools"][0]["name"] == "c"
    events = [json.loads(x)["event"] for x in log.read_text().splitlines()]
    assert events[-4:] == ["repair", "approve", "forget", "pin"]
    assert run_cli(toolpin_home, "verify").returncode == 0
