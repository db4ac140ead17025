"""Benchmark `toolpin log site`: a full build, then an unchanged rebuild (incremental).

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_site.py [--servers 20000] [--entries 100000] [--dir DIR]

The log is written with the crawler's own record code (one entry per new or changed
surface, definitions in blobs): every server is first recorded once, then the remaining
entries are changes of randomly chosen servers (seeded, so runs compare). Baseline, in the
same run: ``verify_log`` of the same log, which every build must do first. Prints figures
only; asserts nothing. The work folder is removed at the end unless --dir is given.
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from toolpin.core.snapshot import Kind, Listing, Snapshot
from toolpin.crawl.candidates import Candidate, PackageCoords, crawl_id
from toolpin.crawl.record import Observation, definitions_blob, observation_record
from toolpin.publog.blobs import BlobStore
from toolpin.publog.entries import encode_entry
from toolpin.publog.note import Signer
from toolpin.publog.tiles import TileLog
from toolpin.publog.verify import verify_log
from toolpin.site.build import build_site, parse_now

NOW = "2026-12-01T12:00:00Z"


def _tools(server: int, version: int) -> list[dict[str, Any]]:
    props: dict[str, Any] = {"query": {"type": "string", "description": "what to look up"}}
    if version % 3 == 2:
        props["limit"] = {"type": "integer", "maximum": 10 * version}
    return [
        {
            "name": "search",
            "description": f"Search the index of server {server}. Revision {version // 2}.",
            "inputSchema": {"type": "object", "properties": props, "required": ["query"]},
        },
        {
            "name": "fetch",
            "description": "Fetch one document by id.",
            "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
        },
        {
            "name": f"tool_{version % 4}",
            "description": "An extra tool.",
            "inputSchema": {"type": "object"},
        },
    ]


def _stamp(day: int, server: int) -> str:
    base = time.gmtime(time.mktime((2026, 6, 1, 0, 0, 0, 0, 0, 0)) + day * 86400 + server % 86400)
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", base)


def write_log(path: Path, servers: int, entries: int, signer: Signer) -> None:
    rng = random.Random(12)
    log = TileLog.open(path)
    blobs = BlobStore(path)
    versions = [0] * servers
    last: dict[int, int] = {}
    looked: dict[int, str] = {}
    plan = list(range(servers)) + [rng.randrange(servers) for _ in range(entries - servers)]
    days = sorted(rng.randrange(180) for _ in plan)
    batch: list[bytes] = []
    for n, (server, day) in enumerate(zip(plan, days, strict=True)):
        version = versions[server]
        versions[server] += 1
        name = f"io.github.example/server-{server}"
        cand = Candidate(
            id=crawl_id("registry", name),
            name=name,
            source="registry",
            transport="stdio",
            package=PackageCoords("npm", f"@example/mcp-{server}", f"1.{version}.0"),
        )
        snap = Snapshot.of_listings(
            {Kind.TOOL: Listing.parse(Kind.TOOL, _tools(server, version))},
            instructions=None,
            instructions_known=True,
        )
        at = _stamp(day, server)
        obs = Observation(
            snapshot=snap, era="handshake", protocol_version="2025-11-25", observed_at=at
        )
        ref = blobs.put(definitions_blob(snap))
        record = observation_record(
            cand,
            obs,
            previous=last.get(server),
            blob=ref,
            previous_look=looked.get(server),
            change="new" if server not in last else "definitions",
        )
        last[server] = n
        looked[server] = at
        batch.append(encode_entry(record))
        if len(batch) == 5000:
            log.append(batch, signer)
            batch = []
    if batch:
        log.append(batch, signer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=20_000)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-site-"))
    signer = Signer.from_seed("bench.example/log", b"\x07" * 32)
    try:
        log_dir = work / "log"
        if not (log_dir / "checkpoint").exists():
            started = time.perf_counter()
            write_log(log_dir, args.servers, args.entries, signer)
            print(
                f"wrote the log: {args.entries:,} entries, {args.servers:,} servers "
                f"in {time.perf_counter() - started:.1f} s (setup, not measured)"
            )
        started = time.perf_counter()
        result = verify_log(log_dir, signer.verifier)
        baseline = time.perf_counter() - started
        assert result.ok, result.reason
        print(f"baseline verify_log: {baseline:.1f} s")
        out = work / "out"
        shutil.rmtree(out, ignore_errors=True)
        now = parse_now(NOW)
        started = time.perf_counter()
        first = build_site(log_dir, signer.verifier, out, now=now)
        full = time.perf_counter() - started
        print(
            f"full build: {full:.1f} s ({full / baseline:.1f}x verify_log), "
            f"{first.files:,} files, {first.written:,} written"
        )
        started = time.perf_counter()
        again = build_site(log_dir, signer.verifier, out, now=now)
        rebuild = time.perf_counter() - started
        print(
            f"unchanged rebuild: {rebuild:.1f} s ({rebuild / baseline:.1f}x verify_log), "
            f"{again.written} files written, {again.removed} removed, "
            f"{again.unchanged:,} unchanged"
        )
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak memory: {peak:.0f} MiB")
    finally:
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
