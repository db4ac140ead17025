"""Benchmark the crawler: throughput against local stub servers at several concurrencies.

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_crawl.py [--servers 200] [--concurrency 1 8 32]

Each stub is a small raw MCP stdio server (``python -S``, the handshake era, three tools)
with its own tool set, listed in a client-style config. For every concurrency level the
crawl starts from an empty log (so every server is new: probe, record, blob, one signed
append), then crawls again with nothing changed. Prints servers/s and the per-probe
p50/p95 (each probe starts a process, goes through the sandbox's stderr pipe, lists
everything and kills the process group). Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from toolpin.crawl.runner import CrawlOptions, crawl
from toolpin.publog.note import Signer

STUB = r"""
import json, sys
spec = json.load(open(sys.argv[1]))
info = {"name": spec["name"], "version": "1.0.0"}
for raw in sys.stdin:
    msg = json.loads(raw)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": info}
    elif method == "tools/list":
        result = {"tools": spec["tools"]}
    else:
        out = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}
        sys.stdout.write(json.dumps(out) + "\n"); sys.stdout.flush(); continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""


def make_servers(work: Path, count: int) -> Path:
    stub = work / "stub.py"
    stub.write_text(STUB, encoding="utf-8")
    specs = work / "specs"
    specs.mkdir()
    servers = {}
    for i in range(count):
        tools = [
            {
                "name": f"tool_{i}_{j}",
                "description": f"Tool {j} of server {i}: does a useful thing.",
                "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
            }
            for j in range(3)
        ]
        spec = specs / f"s{i}.json"
        spec.write_text(json.dumps({"name": f"stub-{i}", "tools": tools}), encoding="utf-8")
        servers[f"stub-{i}"] = {"command": sys.executable, "args": ["-S", str(stub), str(spec)]}
    config = work / "servers.json"
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return config


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--servers", type=int, default=200)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    args = parser.parse_args()

    print(
        f"python {platform.python_version()} on {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs; {args.servers} stub servers"
    )
    print(
        f"{'concurrency':>11} {'pass':>9} {'servers/s':>10} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'ok':>4} {'new':>4} {'appended':>8} {'wall s':>7}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-crawl-") as tmp:
        work = Path(tmp)
        config = make_servers(work, args.servers)
        signer = Signer.generate("bench.example/crawl")
        for level in args.concurrency:
            log_dir = work / f"log-c{level}"
            for label in ("first", "unchanged"):
                opts = CrawlOptions(
                    log_dir=log_dir,
                    signer=signer,
                    sources=("config",),
                    servers_config=config,
                    concurrency=level,
                    timeout=60.0,
                    state_path=work / f"state-c{level}.sqlite",
                    cache_dir=work / "cache",
                    optout_dirs=(),
                )
                started = time.perf_counter()
                summary = crawl(opts)
                wall = time.perf_counter() - started
                probes = [r.seconds for r in summary.results]
                data = summary.to_json()
                print(
                    f"{level:>11} {label:>9} {len(probes) / wall:>10.1f} "
                    f"{statistics.median(probes) * 1000:>8.0f} {pct(probes, 0.95) * 1000:>8.0f} "
                    f"{data['ok']:>4} {data['new']:>4} {data['appended']:>8} {wall:>7.2f}"
                )


if __name__ == "__main__":
    main()
