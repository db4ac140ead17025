"""What ``toolpin run`` adds: latency per round trip, throughput, start-up, a 10 MB result.

Every figure is measured against a direct connection to the same server in the same run
(ratios between runs on a shared 2-core machine move by 30% or more). The server is a
minimal raw JSON-RPC responder (standard library only, fixed answers) so that it is not
the noise; the client is raw ``os.read``/``os.write`` on pipes. Prints a table; asserts
nothing.

    PYTHONPATH=src python bench/bench_proxy.py [--quick]

Targets (issue 3): <= 50 us added per round trip, <= 60 ms added at start. The reference
(mcp-pin, Node) adds about 170 us and 100-140 ms. Issue 9: a mid-session 100-tool
``tools/list`` adds <= 0.7 ms, ping <= 50 us over the relay that checks nothing, the 10 MB
result at least as fast as before (about 150 MB/s here).
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"

SERVER = r"""
import os, sys, json
COUNT = int(sys.argv[2]) if len(sys.argv) > 2 else 3
ROTATE = len(sys.argv) > 3 and sys.argv[3] == "rotate"
TOOLS = [{"name": f"tool{i}", "description": f"Tool number {i}.",
          "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}}
         for i in range(COUNT)]
BIG = int(sys.argv[1]) if len(sys.argv) > 1 else 10 << 20
turn = [0]
out = sys.stdout.buffer
def reply(id_, result):
    head = b'{"jsonrpc":"2.0","id":' + json.dumps(id_).encode()
    out.write(head + b',"result":' + result + b'}\n')
    out.flush()
TOOLS_JSON = json.dumps({"tools": TOOLS}).encode()
INIT = json.dumps({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "bench", "version": "1"}}).encode()
ECHO = b'{"content":[{"type":"text","text":"ok"}]}'
for line in sys.stdin.buffer:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    m = msg["method"]
    if m == "initialize":
        reply(msg["id"], INIT)
    elif m == "tools/list" and ROTATE and not str(msg["id"]).startswith("toolpin-"):
        # The same set in another order each time: new bytes, no drift (a full check).
        turn[0] = (turn[0] + 1) % len(TOOLS)
        reply(msg["id"], json.dumps({"tools": TOOLS[turn[0]:] + TOOLS[:turn[0]]}).encode())
    elif m == "tools/list":
        reply(msg["id"], TOOLS_JSON)
    elif m == "tools/call" and msg["params"]["name"] == "big":
        reply(msg["id"], b'{"content":[{"type":"text","text":"' + b"x" * BIG + b'"}]}')
    elif m == "tools/call":
        reply(msg["id"], ECHO)
    else:
        reply(msg["id"], b"{}")
"""

BARE_RELAY = r"""
import os, subprocess, sys, threading
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
def up():
    while data := os.read(p.stdout.fileno(), 65536):
        os.write(1, data)
    os._exit(0)
threading.Thread(target=up, daemon=True).start()
while data := os.read(0, 65536):
    os.write(p.stdin.fileno(), data)
p.stdin.close()
p.wait()
"""
"""A relay that checks nothing (two threads, os.read/os.write): the floor for any
line relay written in Python on this machine."""

NODE_SERVER = r"""
const rl = require("readline").createInterface({ input: process.stdin });
const tools = [0, 1, 2].map((i) => ({ name: `tool${i}`, description: `Tool number ${i}.`,
  inputSchema: { type: "object", properties: { x: { type: "string" } } } }));
rl.on("line", (line) => {
  const msg = JSON.parse(line);
  if (msg.id === undefined) return;
  let result = {};
  if (msg.method === "initialize") result = { protocolVersion: "2025-11-25",
    capabilities: { tools: {} }, serverInfo: { name: "bench-node", version: "1" } };
  else if (msg.method === "tools/list") result = { tools };
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }) + "\n");
});
"""

PING = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n'
LIST = b'{"jsonrpc":"2.0","id":%d,"method":"tools/list"}\n'
CALL = (
    b'{"jsonrpc":"2.0","id":%d,"method":"tools/call",'
    b'"params":{"name":"echo","arguments":{"x":"hello"}}}\n'
)
INIT = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n'
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'


class Peer:
    """A spawned process spoken to with raw lines."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            bufsize=0,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.win = self.proc.stdin.fileno()
        self.rout = self.proc.stdout.fileno()
        self.buffer = b""

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.win, view) :]

    def line(self) -> bytes:
        while True:
            nl = self.buffer.find(b"\n")
            if nl >= 0:
                line, self.buffer = self.buffer[: nl + 1], self.buffer[nl + 1 :]
                return line
            data = os.read(self.rout, 1 << 20)
            if not data:
                raise RuntimeError("peer closed")
            self.buffer += data

    def big_line(self) -> int:
        parts = [self.buffer]
        size = len(self.buffer)
        while not parts[-1].endswith(b"\n"):
            data = os.read(self.rout, 1 << 20)
            if not data:
                raise RuntimeError("peer closed")
            parts.append(data)
            size += len(data)
        self.buffer = b""
        return size

    def handshake(self) -> None:
        self.write(INIT)
        self.line()
        self.write(INITIALIZED)

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()


def argv_direct(*args: str) -> list[str]:
    return [sys.executable, "-c", SERVER, *args]


def argv_node() -> list[str]:
    return ["node", "-e", NODE_SERVER]


def argv_proxy(server: list[str] | None = None) -> list[str]:
    server = server if server is not None else argv_direct()
    return [sys.executable, "-m", "toolpin", "run", "--quiet", "--", *server]


def env_for(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC)
    env["TOOLPIN_HOME"] = str(home)
    return env


def sequential(peer: Peer, template: bytes, count: int) -> list[float]:
    times = []
    for i in range(1, count + 1):
        start = time.perf_counter()
        peer.write(template % i)
        peer.line()
        times.append(time.perf_counter() - start)
    return times


def pipelined(peer: Peer, template: bytes, count: int) -> float:
    payload = b"".join(template % i for i in range(1, count + 1))
    start = time.perf_counter()
    writer = threading.Thread(target=peer.write, args=(payload,))
    writer.start()
    for _ in range(count):
        peer.line()
    writer.join()
    return time.perf_counter() - start


def startup(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    peer = Peer(argv, env)
    peer.write(INIT)
    peer.line()
    elapsed = time.perf_counter() - start
    peer.write(INITIALIZED)
    peer.close()
    return elapsed


def big_result(peer: Peer) -> float:
    start = time.perf_counter()
    peer.write(b'{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"big"}}\n')
    size = peer.big_line()
    elapsed = time.perf_counter() - start
    assert size > 10 << 20
    return elapsed


def us(seconds: float) -> str:
    return f"{seconds * 1e6:8.1f} us"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.1f} ms"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    parser.add_argument(
        "--lists-only", action="store_true", help="only the mid-session tools/list rows"
    )
    args = parser.parse_args()
    count = 500 if args.quick else 2000
    # Like an installed package: bytecode compiled once (PYTHONDONTWRITEBYTECODE may be set).
    compileall.compile_dir(str(SRC), quiet=1)
    starts = 3 if args.quick else 7
    rows: list[tuple[str, str, str, str]] = []

    with tempfile.TemporaryDirectory(prefix="toolpin-bench-") as tmp:
        home = Path(tmp) / "home"
        env = env_for(home)

        # --- start-up: first pin (a fresh store each time), then verify; the proxy starts
        # the server first and imports the rest while it boots, so the figure depends on
        # the server's own boot time: measured with a bare Python and a bare Node server.
        servers = [] if args.lists_only else [("python", argv_direct())]
        if shutil.which("node") and not args.lists_only:
            servers.append(("node", argv_node()))
        for server_name, server in servers:
            direct_start = [startup(server, env) for _ in range(starts)]
            first_pin = [
                startup(argv_proxy(server), env_for(Path(tmp) / f"fresh-{server_name}{i}"))
                for i in range(starts)
            ]
            verify = [startup(argv_proxy(server), env) for _ in range(starts + 1)][1:]
            d0 = statistics.median(direct_start)
            p1 = statistics.median(first_pin)
            p2 = statistics.median(verify)
            rows.append((f"spawn -> initialize answer ({server_name} server)", ms(d0), "", ""))
            rows.append(("  through toolpin, first pin", ms(d0), ms(p1), ms(p1 - d0)))
            rows.append(("  through toolpin, verify", ms(d0), ms(p2), ms(p2 - d0)))

        # --- round trips
        results: dict[str, Any] = {}
        bare = [sys.executable, "-c", BARE_RELAY, *argv_direct()]
        runs = (("direct", argv_direct()), ("bare", bare), ("proxy", argv_proxy()))
        for name, argv in () if args.lists_only else runs:
            peer = Peer(argv, env)
            peer.handshake()
            sequential(peer, PING, 200)  # warm up
            results[name, "ping"] = sequential(peer, PING, count)
            results[name, "call"] = sequential(peer, CALL, count)
            results[name, "pipe-ping"] = pipelined(peer, PING, count)
            results[name, "pipe-call"] = pipelined(peer, CALL, count)
            results[name, "big"] = min(big_result(peer) for _ in range(3))
            peer.close()
        if not args.lists_only:
            for kind, label in (("ping", "ping"), ("call", "tools/call (echo)")):
                d = statistics.median(results["direct", kind])
                p = statistics.median(results["proxy", kind])
                b = statistics.median(results["bare", kind])
                rows.append((f"{label}, {count} sequential, median", us(d), us(p), us(p - d)))
                rows.append(("  a relay that checks nothing, median", us(d), us(b), us(b - d)))
                d95 = pct(results["direct", kind], 0.95)
                p95 = pct(results["proxy", kind], 0.95)
                rows.append((f"{label}, p95", us(d95), us(p95), us(p95 - d95)))
            for kind, label in (("pipe-ping", "ping"), ("pipe-call", "tools/call")):
                d = results["direct", kind]
                p = results["proxy", kind]
                rows.append(
                    (f"{count} pipelined {label}, total", ms(d), ms(p), f"{count / p:8.0f} msg/s")
                )
            d = results["direct", "big"]
            p = results["proxy", "big"]
            b = results["bare", "big"]
            rows.append(("10 MB tool result, best of 3", ms(d), ms(p), ms(p - d)))
            rows.append(("  a relay that checks nothing", ms(d), ms(b), ms(b - d)))
            mb = (10 << 20) / (1 << 20)
            rows.append(
                (
                    "  throughput",
                    f"{mb / d:6.0f} MB/s",
                    f"{mb / p:6.0f} MB/s",
                    f"bare {mb / b:4.0f} MB/s",
                )
            )

        # --- a mid-session 100-tool tools/list: every answer is checked against the pin.
        # "same": the same bytes each time (the verified page is recognised); "rotated":
        # the same tools in another order each time (new bytes: parsed and hashed).
        lists = max(100, count // 10)
        for variant in ("same", "rotated"):
            server = argv_direct(str(1 << 10), "100", "rotate" if variant == "rotated" else "")
            bare = [sys.executable, "-c", BARE_RELAY, *server]
            timed: dict[str, float] = {}
            for name, argv in (("direct", server), ("bare", bare), ("proxy", argv_proxy(server))):
                peer = Peer(argv, env_for(Path(tmp) / f"list-{variant}"))
                peer.handshake()
                sequential(peer, LIST, 20)  # warm up
                timed[name] = statistics.median(sequential(peer, LIST, lists))
                peer.close()
            d, b, p = timed["direct"], timed["bare"], timed["proxy"]
            rows.append(
                (f"100-tool tools/list mid-session ({variant}), median", us(d), us(p), us(p - d))
            )
            rows.append(("  a relay that checks nothing, median", us(d), us(b), us(b - d)))
            rows.append(("  toolpin over the relay that checks nothing", "", "", us(p - b)))

    width = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{width}}  {'direct':>11}  {'toolpin':>11}  {'added':>12}")
    for row in rows:
        print(f"{row[0]:<{width}}  {row[1]:>11}  {row[2]:>11}  {row[3]:>12}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
