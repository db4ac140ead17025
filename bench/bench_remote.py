"""What ``toolpin run --url`` adds in front of a remote server: latency per round trip and
start-up, against the SDK's own client talking Streamable HTTP to the same server
directly, in the same run (rounds alternate, so drift on a shared machine hits both).

The server is an SDK ``MCPServer`` over Streamable HTTP (uvicorn, loopback) in its own
process; the client is the SDK ``Client``: once with the URL (direct), once on stdio
through ``python -m toolpin run --url``. Both eras: ``legacy`` (initialize, an
``Mcp-Session-Id``, SSE answers) and ``auto`` (2026-07-28, ``server/discover``).

* start-up: from entering ``Client(...)`` to the first ``tools/list`` answered (through
  toolpin this includes starting the proxy and its check of every listing);
* round trip: one ``tools/call`` answered, sequentially, median and p90 of each round.

A third path is the SDK ``Client`` with the URL of ``toolpin gateway`` (started once, in
front of the same server): in the 2026-07-28 era every request there is its own checked
session (``server/discover`` and every listing before the request), which its round trip
shows.

    PYTHONPATH=src python bench/bench_remote.py [--quick]

Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"

SERVER = r"""
import sys
import uvicorn
from mcp.server.mcpserver import MCPServer
app = MCPServer("bench-remote", instructions="Benchmark server.")
def tool(x: str = "") -> str:
    return "ok"
for i in range(3):
    app.add_tool(tool, name=f"tool{i}", description=f"Tool number {i}.")
uvicorn.run(app.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[1]),
            log_level="warning")
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(port)], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("the benchmark server did not start") from None
            time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port}/mcp"


def through_toolpin(url: str, home: str) -> StdioServerParameters:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if "PYTHONPATH" in env else "")
    env["TOOLPIN_HOME"] = home
    return StdioServerParameters(
        command=sys.executable, args=["-m", "toolpin", "run", "--quiet", "--url", url], env=env
    )


def start_gateway(url: str, home: str) -> tuple[subprocess.Popen[bytes], str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if "PYTHONPATH" in env else "")
    env["TOOLPIN_HOME"] = home
    argv = [sys.executable, "-m", "toolpin", "gateway", "--quiet", "--listen", "127.0.0.1:0"]
    proc = subprocess.Popen([*argv, "--url", url], env=env, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    line = proc.stderr.readline().decode()
    if " at " not in line:
        raise RuntimeError("the gateway did not start")
    return proc, line.rsplit(" at ", 1)[1].strip()


async def one_round(target: Any, mode: str, calls: int) -> tuple[float, list[float]]:
    start = time.perf_counter()
    async with Client(target, mode=mode) as client:
        await client.list_tools(cache_mode="bypass")
        startup = time.perf_counter() - start
        trips = []
        for _ in range(calls):
            t0 = time.perf_counter()
            await client.call_tool("tool1", {"x": "a"})
            trips.append(time.perf_counter() - t0)
    return startup, trips


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer rounds and calls")
    args = parser.parse_args()
    rounds, calls = (3, 50) if args.quick else (7, 200)
    proc, url = start_server()
    home = tempfile.mkdtemp(prefix="toolpin-bench-remote-")
    gateway, gateway_url = start_gateway(url, home)
    paths = ("direct", "toolpin", "gateway")
    try:
        results: dict[tuple[str, str], dict[str, list[float]]] = {}
        for mode in ("legacy", "auto"):
            anyio.run(one_round, through_toolpin(url, home), mode, 5)  # pin once
            for _ in range(rounds):
                targets = (url, through_toolpin(url, home), gateway_url)
                for name, target in zip(paths, targets, strict=True):
                    startup, trips = anyio.run(one_round, target, mode, calls)
                    slot = results.setdefault((mode, name), {"startup": [], "p50": [], "p90": []})
                    slot["startup"].append(startup)
                    trips.sort()
                    slot["p50"].append(statistics.median(trips))
                    slot["p90"].append(trips[int(len(trips) * 0.9)])
        print(f"rounds={rounds} calls/round={calls}; median over rounds; ms")
        print(f"{'era':8} {'path':8} {'start-up':>9} {'rt p50':>8} {'rt p90':>8}")
        for mode in ("legacy", "auto"):
            row = {}
            for name in paths:
                slot = results[(mode, name)]
                row[name] = {k: statistics.median(v) * 1000 for k, v in slot.items()}
                r = row[name]
                print(f"{mode:8} {name:8} {r['startup']:9.1f} {r['p50']:8.2f} {r['p90']:8.2f}")
            for name in paths[1:]:
                added = {k: row[name][k] - row["direct"][k] for k in row["direct"]}
                label = f"+{name}"
                print(
                    f"{mode:8} {label:8} {added['startup']:9.1f} {added['p50']:8.2f} "
                    f"{added['p90']:8.2f}"
                )
    finally:
        gateway.terminate()
        gateway.wait(20)
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
