"""toolpin side by side with the reference (mcp-pin), one driver, one server, one run.

Every target is spoken to by the same client driver (raw JSON-RPC lines over pipes,
``os.read``/``os.write``, from ``bench_proxy.Peer``) and fronts the same server (a minimal
raw JSON-RPC stdio server in Python with a 100-tool listing and fixed answers). The
targets are measured in rounds, interleaved (the order rotates each round), so that the
machine's drift hits every target alike:

- ``direct``: the server itself;
- ``relay (python)`` / ``relay (node)``: a byte relay that checks nothing, the floor of
  any relay written in that language on this machine;
- ``toolpin``: ``toolpin run --quiet -- SERVER`` (its own ``TOOLPIN_HOME``);
- ``mcp-pin``: ``node $TOOLPIN_BENCH_MCP_PIN -- SERVER`` (its own ``MCP_PIN_HOME``), only
  when ``TOOLPIN_BENCH_MCP_PIN`` names the reference's ``bin/attest.js``.

Start-up is spawn -> ``initialize`` answer on the verify path (each store holds a pin made
before the first sample). The offline part times a full ``toolpin check`` (``--no-cache``
when this checkout has it) of an unchanged 1,000-tool listing, next to the floor (Python
``json.loads`` + SHA-256 of the same bytes, and Node ``JSON.parse`` + sha256) and, with
the reference present, its ``fingerprintToolset`` (it has no offline check command).

    PYTHONPATH=src python bench/bench_reference.py [--quick] [--rounds N]
    TOOLPIN_BENCH_MCP_PIN=/path/to/mcp-pin/bin/attest.js PYTHONPATH=src python bench/...

Prints medians, the spread over rounds and the cost added over ``direct``; asserts nothing
about speed (it does check that every answer is the answer asked for).
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SRC = REPO / "src"
sys.path.insert(0, str(HERE))

from bench_proxy import BARE_RELAY, CALL, INIT, INITIALIZED, PING, Peer  # noqa: E402

LISTING_1K = REPO / "tests" / "data" / "vectors" / "bench-tools-1000.json"  # = shared/vectors/
SET_HASH_1K = "5dd8270765edc633a0b03ed1178b26b6b6fce8594c2be455628554d7875c61cb"
BIG_BYTES = 10 << 20

SERVER = r"""
import json, sys
TOOLS = [{"name": f"tool{i:03d}",
          "description": f"Tool number {i}: reads a thing and returns a short answer.",
          "inputSchema": {"type": "object",
                          "properties": {"x": {"type": "string", "description": "input"},
                                         "n": {"type": "integer", "minimum": 0}},
                          "required": ["x"]},
          "annotations": {"readOnlyHint": True}}
         for i in range(100)]
out = sys.stdout.buffer
def reply(id_, body):
    out.write(b'{"jsonrpc":"2.0","id":' + json.dumps(id_).encode() + body + b'}\n')
    out.flush()
LIST = b',"result":' + json.dumps({"tools": TOOLS}, separators=(",", ":")).encode()
# The same definitions with every object's members in reverse order: other bytes, same
# canonical form (no drift), so a proxy cannot skip the re-check by comparing bytes.
def reverse(v):
    if isinstance(v, dict):
        return {k: reverse(v[k]) for k in reversed(list(v))}
    return [reverse(x) for x in v] if isinstance(v, list) else v
LIST_REVERSED = b',"result":' + json.dumps({"tools": reverse(TOOLS)}).encode()
lists = 0
INIT = b',"result":' + json.dumps({"protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}}, "serverInfo": {"name": "bench", "version": "1"}}).encode()
ECHO = b',"result":{"content":[{"type":"text","text":"ok"}]}'
BIG = b',"result":{"content":[{"type":"text","text":"' + b"x" * (10 << 20) + b'"}]}'
EMPTY = b',"result":{}'
UNKNOWN = b',"error":{"code":-32601,"message":"Method not found"}'
for line in sys.stdin.buffer:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    m = msg.get("method")
    if m == "initialize":
        reply(msg["id"], INIT)
    elif m == "tools/list" and "_meta" in (msg.get("params") or {}):
        lists += 1
        reply(msg["id"], LIST_REVERSED if lists % 2 else LIST)
    elif m == "tools/list":
        reply(msg["id"], LIST)
    elif m == "tools/call":
        reply(msg["id"], BIG if msg["params"]["name"] == "big" else ECHO)
    elif m == "ping":
        reply(msg["id"], EMPTY)
    else:
        reply(msg["id"], UNKNOWN)
"""

NODE_RELAY = r"""
const { spawn } = require("child_process");
const child = spawn(process.argv[1], process.argv.slice(2), { stdio: ["pipe", "pipe", "inherit"] });
process.stdin.pipe(child.stdin);
child.stdout.pipe(process.stdout);
child.on("exit", (code) => process.exit(code === null ? 1 : code));
"""
"""A Node relay that checks nothing (stream pipes): the floor for a relay in Node."""

NODE_OFFLINE = r"""
const fs = require("fs");
const crypto = require("crypto");
const [file, repeat, canonical] = [process.argv[1], Number(process.argv[2]), process.argv[3]];
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };
function timed(fn) {
  fn();
  const xs = [];
  for (let i = 0; i < repeat; i++) {
    const t = process.hrtime.bigint();
    fn();
    xs.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return { median: med(xs), best: Math.min(...xs) };
}
const out = {};
out.floor = timed(() => {
  const bytes = fs.readFileSync(file);
  JSON.parse(bytes.toString("utf8"));
  crypto.createHash("sha256").update(bytes).digest("hex");
});
if (canonical) {
  const { fingerprintToolset } = require(canonical);
  const tools = (v) => (Array.isArray(v) ? v : v.tools);
  out.set_hash = fingerprintToolset(tools(JSON.parse(fs.readFileSync(file, "utf8")))).setHash;
  out.fingerprint = timed(() => {
    fingerprintToolset(tools(JSON.parse(fs.readFileSync(file, "utf8"))));
  });
}
process.stdout.write(JSON.stringify(out));
"""

LIST = b'{"jsonrpc":"2.0","id":%d,"method":"tools/list"}\n'
LIST_ALTERNATE = (
    b'{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{"_meta":{"bench":"alternate"}}}\n'
)
BIG = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"big"}}\n'


@dataclass
class Target:
    name: str
    argv: list[str]
    env: dict[str, str]
    pinned: bool = False
    relay: str = ""  # the do-nothing relay in the same language, for the last column
    samples: dict[str, list[float]] = field(default_factory=dict)
    round_medians: dict[str, list[float]] = field(default_factory=dict)


@dataclass
class Sizes:
    rounds: int
    starts: int
    trips: int
    lists: int
    bigs: int
    offline: int


def server_argv() -> list[str]:
    return [sys.executable, "-c", SERVER]


def base_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC)
    return env


def targets(tmp: Path, mcp_pin: Path | None) -> list[Target]:
    server = server_argv()
    env = base_env()
    out = [
        Target("direct", server, env),
        Target("relay (python)", [sys.executable, "-c", BARE_RELAY, *server], env),
    ]
    if shutil.which("node"):
        out.append(Target("relay (node)", ["node", "-e", NODE_RELAY, *server], env))
    toolpin_env = {**env, "TOOLPIN_HOME": str(tmp / "toolpin-home")}
    toolpin = [sys.executable, "-m", "toolpin", "run", "--quiet", "--", *server]
    out.append(Target("toolpin", toolpin, toolpin_env, pinned=True, relay="relay (python)"))
    if mcp_pin is not None:
        pin_env = {**env, "MCP_PIN_HOME": str(tmp / "mcp-pin-home")}
        pin_env.pop("ATTEST_HOME", None)
        mcp_argv = ["node", str(mcp_pin), "--", *server]
        out.append(Target("mcp-pin", mcp_argv, pin_env, pinned=True, relay="relay (node)"))
    return out


def result_of(line: bytes, ident: int) -> object:
    """The ``result`` of an answer to request ``ident``; anything else stops the run."""
    msg = json.loads(line)
    if msg.get("id") != ident or "result" not in msg:
        raise RuntimeError(f"unexpected answer to request {ident}: {line[:200]!r}")
    return msg["result"]


def startup(target: Target) -> float:
    start = time.perf_counter()
    peer = Peer(target.argv, target.env)
    peer.write(INIT)
    line = peer.line()
    elapsed = time.perf_counter() - start
    result_of(line, 0)
    peer.write(INITIALIZED)
    peer.close()
    return elapsed


def trips(peer: Peer, template: bytes, first: int, count: int) -> list[float]:
    times = []
    for ident in range(first, first + count):
        start = time.perf_counter()
        peer.write(template % ident)
        line = peer.line()
        times.append(time.perf_counter() - start)
        if ident < first + 2:  # the first two: for tools/list, both serialisations
            result_of(line, ident)
    return times


def big_result(peer: Peer, ident: int) -> float:
    start = time.perf_counter()
    peer.write(BIG % ident)
    size = peer.big_line()
    elapsed = time.perf_counter() - start
    if size < BIG_BYTES:
        raise RuntimeError(f"the 10 MB result arrived short ({size} bytes)")
    return elapsed


def session(target: Target, sizes: Sizes) -> dict[str, list[float]]:
    peer = Peer(target.argv, target.env)
    try:
        peer.handshake()
        trips(peer, PING, 1, 100)  # warm up
        peer.write(LIST % 100)
        listing = result_of(peer.line(), 100)
        assert isinstance(listing, dict) and len(listing["tools"]) == 100, target.name
        ident = 1000
        out = {}
        out["ping"] = trips(peer, PING, ident, sizes.trips)
        ident += sizes.trips
        out["call"] = trips(peer, CALL, ident, sizes.trips)
        ident += sizes.trips
        out["list"] = trips(peer, LIST, ident, sizes.lists)
        ident += sizes.lists
        out["relist"] = trips(peer, LIST_ALTERNATE, ident, sizes.lists)
        ident += sizes.lists
        out["big"] = [big_result(peer, ident + i) for i in range(sizes.bigs)]
        return out
    finally:
        peer.close()


def record(target: Target, kind: str, values: list[float]) -> None:
    target.samples.setdefault(kind, []).extend(values)
    target.round_medians.setdefault(kind, []).append(statistics.median(values))


def measure(all_targets: list[Target], sizes: Sizes) -> None:
    for target in all_targets:
        if target.pinned:  # the first pin: every sample below takes the verify path
            startup(target)
    for target in all_targets:  # one untimed session each: caches, bytecode, JIT
        session(target, Sizes(1, 1, 50, 5, 1, 1))
    for round_no in range(sizes.rounds):
        shift = round_no % len(all_targets)
        order = all_targets[shift:] + all_targets[:shift]
        for target in order:
            record(target, "start", [startup(target) for _ in range(sizes.starts)])
        for target in order:
            for kind, values in session(target, sizes).items():
                record(target, kind, values)
        print(f"  round {round_no + 1}/{sizes.rounds} done", file=sys.stderr, flush=True)


def number(seconds: float, unit: str) -> str:
    return f"{seconds * 1e6:.0f}" if unit == "us" else f"{seconds * 1e3:.1f}"


def fmt(seconds: float, unit: str) -> str:
    return f"{number(seconds, unit)} {unit}"


def spread(values: list[float], unit: str) -> str:
    return f"{number(min(values), unit)}..{fmt(max(values), unit)}"


ROWS = (
    ("start", "spawn -> initialize answer (verify)", "ms"),
    ("ping", "ping round trip", "us"),
    ("call", "tools/call round trip (echo)", "us"),
    ("list", "tools/list, 100 tools, mid-session, the same bytes each time", "us"),
    ("relist", "tools/list, 100 tools, mid-session, member order alternating", "us"),
    ("big", "10 MB tools/call result", "ms"),
)


def added(target: Target, base: Target, kind: str, unit: str) -> tuple[str, str]:
    """Median minus the base's median, and the range of that difference over the rounds."""
    mine, theirs = target.round_medians[kind], base.round_medians[kind]
    per_round = [t - b for t, b in zip(mine, theirs, strict=True)]
    diff = statistics.median(target.samples[kind]) - statistics.median(base.samples[kind])
    return fmt(diff, unit), f"[{spread(per_round, unit)}]"


def report(all_targets: list[Target], sizes: Sizes) -> None:
    direct = all_targets[0]
    by_name = {t.name: t for t in all_targets}
    counts = {"start": sizes.starts, "ping": sizes.trips, "call": sizes.trips}
    counts |= {"list": sizes.lists, "relist": sizes.lists, "big": sizes.bigs}
    print()
    print("median of all samples; 'rounds' = lowest-highest per-round median;")
    print("'added' = median minus direct's median [lowest-highest of that per round];")
    print("'over relay' = the same over the do-nothing relay written in the same language")
    head = f"  {'target':<15} {'median':>9} {'rounds':>15} {'added':>9} {'':>17}"
    head += f" {'over relay':>10} {'':>17}"
    for kind, label, unit in ROWS:
        print(f"\n{label} ({sizes.rounds} rounds x {counts[kind]})")
        print(head)
        for target in all_targets:
            med = statistics.median(target.samples[kind])
            cells = [fmt(med, unit), spread(target.round_medians[kind], unit)]
            cells += list(added(target, direct, kind, unit)) if target is not direct else ["", ""]
            relay = by_name.get(target.relay)
            cells += list(added(target, relay, kind, unit)) if relay is not None else ["", ""]
            line = f"  {target.name:<15} {cells[0]:>9} {cells[1]:>15} {cells[2]:>9} {cells[3]:>17}"
            line += f" {cells[4]:>10} {cells[5]:>17}"
            if kind == "big":
                line += f"  {BIG_BYTES / med / 1e6:.0f} MB/s"
            print(line.rstrip())


def process_ms(argv: list[str], env: dict[str, str], repeat: int, ok: int = 0) -> list[float]:
    samples = []
    for _ in range(repeat + 1):
        start = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, check=False)
        samples.append((time.perf_counter() - start) * 1e3)
        if done.returncode != ok:
            raise RuntimeError(f"{argv[:4]} exited {done.returncode}: {done.stderr[-300:]!r}")
    return samples[1:]


def in_process_ms(fn: Callable[[], object], repeat: int) -> list[float]:
    fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return samples


def has_no_cache() -> bool:
    env = base_env()
    done = subprocess.run(
        [sys.executable, "-m", "toolpin", "check", "--help"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return "--no-cache" in done.stdout


def offline(tmp: Path, mcp_pin: Path | None, repeat: int) -> None:
    from toolpin.offline.check import check, pin

    listing = LISTING_1K
    data = listing.read_bytes()
    lock = tmp / "bench-1k.lock"
    home = tmp / "offline-home"
    env = {**base_env(), "TOOLPIN_HOME": str(home)}
    os.environ["TOOLPIN_HOME"] = str(home)
    pin([listing], lock, source="bench", pinned_at="2026-12-01T00:00:00Z")
    no_cache = has_no_cache()
    check_argv = [sys.executable, "-m", "toolpin", "check", "--listing", str(listing)]
    check_argv += ["--lock", str(lock), *(["--no-cache"] if no_cache else [])]

    def full_check() -> None:
        assert check([listing], lock, use_cache=False).ok

    def floor() -> None:
        raw = listing.read_bytes()
        json.loads(raw)
        hashlib.sha256(raw).hexdigest()

    py_floor = "import hashlib,json,sys;b=open(sys.argv[1],'rb').read();json.loads(b);"
    py_floor += "hashlib.sha256(b).hexdigest()"
    node_floor = "const b=require('fs').readFileSync(process.argv[1]);JSON.parse(b.toString());"
    node_floor += "require('crypto').createHash('sha256').update(b).digest('hex')"
    rows: list[tuple[str, list[float]]] = []
    rows.append(("in-process: toolpin check (no cache, lock verified too)", []))
    rows.append(("in-process: floor, Python json.loads + sha256", []))
    node = shutil.which("node") is not None
    canonical = ""
    if mcp_pin is not None:
        canonical = str((mcp_pin.parent.parent / "src" / "canonical.js").resolve())
    node_rows: dict[str, list[float]] = {"floor": [], "fingerprint": []}
    proc: dict[str, list[float]] = {
        "toolpin check" + (" --no-cache" if no_cache else " (default, cached)"): [],
        "floor: python -c json.loads + sha256": [],
    }
    if node:
        proc["floor: node -e JSON.parse + sha256"] = []
    # interleaved: each pass times every item once (a few samples each)
    passes = max(1, repeat // 5)
    for _ in range(passes):
        rows[0][1].extend(in_process_ms(full_check, 5))
        rows[1][1].extend(in_process_ms(floor, 5))
        names = list(proc)
        proc[names[0]].extend(process_ms(check_argv, env, 2))
        proc[names[1]].extend(process_ms([sys.executable, "-c", py_floor, str(listing)], env, 2))
        if node:
            proc[names[2]].extend(process_ms(["node", "-e", node_floor, str(listing)], env, 2))
            got = subprocess.run(
                ["node", "-e", NODE_OFFLINE, str(listing), "5", canonical],
                capture_output=True,
                check=True,
                text=True,
            )
            result = json.loads(got.stdout)
            node_rows["floor"].append(result["floor"]["median"])
            if canonical:
                if result["set_hash"] != SET_HASH_1K:
                    raise RuntimeError("the reference's set hash differs from the vector's")
                node_rows["fingerprint"].append(result["fingerprint"]["median"])
    print(f"\noffline: {listing.name} ({len(data):,} bytes, 1,000 tools, unchanged)")
    base = statistics.median(rows[1][1])
    for label, values in rows:
        med = statistics.median(values)
        print(f"  {label:<62} {med:7.1f} ms  (best {min(values):.1f})  {med / base:5.1f}x floor")
    if node:
        nfloor = statistics.median(node_rows["floor"])
        print(
            f"  {'in-process: floor, Node JSON.parse + sha256':<62} {nfloor:7.1f} ms  "
            f"(best {min(node_rows['floor']):.1f})"
        )
        if canonical:
            fp = statistics.median(node_rows["fingerprint"])
            print(
                f"  {'in-process: mcp-pin JSON.parse + fingerprintToolset':<62} {fp:7.1f} ms  "
                f"(best {min(node_rows['fingerprint']):.1f})  {fp / nfloor:5.1f}x node floor"
            )
        else:
            print("  mcp-pin: not measured (TOOLPIN_BENCH_MCP_PIN unset)")
    pfloor = statistics.median(proc["floor: python -c json.loads + sha256"])
    for label, values in proc.items():
        med = statistics.median(values)
        print(
            f"  {'process: ' + label:<62} {med:7.1f} ms  (best {min(values):.1f})  "
            f"{med / pfloor:5.1f}x python process floor"
        )
    if mcp_pin is not None:
        print("  mcp-pin has no offline check of a saved listing; fingerprintToolset is its core")


def versions(mcp_pin: Path | None) -> None:
    def git(root: Path, *args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
        )
        return done.stdout.strip() if done.returncode == 0 else "?"

    status = git(REPO, "status", "--porcelain", "src")
    dirty = " (with uncommitted changes)" if status not in ("", "?") else ""
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
    print(f"toolpin {git(REPO, 'log', '-1', '--format=%h %cs')}{dirty}")
    if mcp_pin is not None:
        root = mcp_pin.parent.parent
        package = json.loads((root / "package.json").read_text())
        if git(root, "rev-parse", "--show-toplevel") == str(root.resolve()):
            where = f"at {git(root, 'log', '-1', '--format=%h %cs')}"
        else:  # a copy of the sources: name the code that ran by its bytes
            digest = hashlib.sha256(mcp_pin.read_bytes()).hexdigest()[:12]
            where = f"(not a git checkout; {mcp_pin.name} sha256 {digest}...)"
        print(f"mcp-pin {package.get('version')} {where}")
    print(
        f"python {sys.version.split()[0]}, node {node.stdout.strip() or 'absent'}, "
        f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short run (for development)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds")
    args = parser.parse_args()
    if args.quick:
        sizes = Sizes(rounds=2, starts=2, trips=200, lists=30, bigs=1, offline=5)
    else:
        sizes = Sizes(rounds=5, starts=4, trips=1000, lists=150, bigs=3, offline=20)
    if args.rounds is not None:
        sizes.rounds = max(1, args.rounds)
    raw = os.environ.get("TOOLPIN_BENCH_MCP_PIN")
    mcp_pin = Path(raw).resolve() if raw else None
    if mcp_pin is not None and not mcp_pin.is_file():
        print(f"TOOLPIN_BENCH_MCP_PIN={raw}: no such file", file=sys.stderr)
        return 2
    compileall.compile_dir(str(SRC), quiet=1)  # like an installed package
    print("toolpin vs the reference, same driver, same server, same run")
    versions(mcp_pin)
    if mcp_pin is None:
        print("mcp-pin: skipped (set TOOLPIN_BENCH_MCP_PIN to its bin/attest.js)")
    sys.stdout.flush()
    with tempfile.TemporaryDirectory(prefix="toolpin-refbench-") as raw_tmp:
        tmp = Path(raw_tmp)
        all_targets = targets(tmp, mcp_pin)
        measure(all_targets, sizes)
        for target in all_targets:
            if target.name == "toolpin" and not any((tmp / "toolpin-home").rglob("*")):
                raise RuntimeError("toolpin's store is empty: the verify path was not taken")
        report(all_targets, sizes)
        offline(tmp, mcp_pin, sizes.offline)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
