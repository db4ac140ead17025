"""Benchmark the log reports: reading and explaining a log, the month, the since-report.

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_reports.py [--servers 2000] [--versions 3]

Builds a log the crawler's way (one observation record and blob per change; every
server first recorded, then changed ``versions - 1`` times, one tool rewritten or a field
added each time, spread over three months), then times, in the same run:

* the baseline: the full audit alone (``verify_log``), which every report starts with;
* ``load_view``: the audit plus decoding every entry and explaining every change
  (blob parse, drift, labels), without and with an explanation cache (cold, then warm:
  the rebuild of an unchanged log);
* one monthly report and one since-report over the view (proofs from the tiles).

Prints figures and ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import tempfile
import time
from pathlib import Path

from toolpin.core.snapshot import Kind, Listing, Snapshot
from toolpin.crawl.candidates import Candidate
from toolpin.crawl.record import Observation, definitions_blob, observation_record
from toolpin.crawl.report import load_view, monthly_report, since_report
from toolpin.publog.blobs import BlobStore
from toolpin.publog.entries import encode_entry
from toolpin.publog.note import Signer
from toolpin.publog.tiles import TileLog
from toolpin.publog.verify import verify_log


def snapshot(server: int, version: int) -> Snapshot:
    tools = []
    for t in range(3):
        props = {"q": {"type": "string"}}
        if t == 0 and version % 2 == 0 and version:
            props[f"f{version}"] = {"type": "string"}
        text = f"Tool {t} of server {server}." + (f" v{version}" if t == 1 and version % 2 else "")
        tools.append(
            {
                "name": f"tool{t}",
                "description": text,
                "inputSchema": {"type": "object", "properties": props},
            }
        )
    return Snapshot(tools=Listing.parse(Kind.TOOL, tools))


def build(path: Path, servers: int, versions: int, signer: Signer) -> int:
    log = TileLog.open(path)
    blobs = BlobStore(path)
    start = dt.datetime(2026, 9, 1, tzinfo=dt.UTC)
    last: dict[int, int] = {}
    size = 0
    for version in range(versions):
        entries = []
        for server in range(servers):
            when = start + dt.timedelta(days=30 * version, seconds=server)
            snap = snapshot(server, version)
            ref = blobs.put(definitions_blob(snap))
            sid = hashlib.sha256(str(server).encode()).hexdigest()[:16]
            cand = Candidate(
                id=sid, name=f"io.example/s{server}", source="registry", transport="stdio"
            )
            obs = Observation(snap, "handshake", "2025-06-18", when.strftime("%Y-%m-%dT%H:%M:%SZ"))
            look = (when - dt.timedelta(hours=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
            record = observation_record(
                cand,
                obs,
                previous=last.get(server),
                blob=ref,
                previous_look=look if version else None,
            )
            entries.append(encode_entry(record))
            last[server] = size + len(entries) - 1
        for i in range(0, len(entries), 1000):
            size = log.append(entries[i : i + 1000], signer).size
    return size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=2000)
    parser.add_argument("--versions", type=int, default=3)
    args, _ = parser.parse_known_args()
    signer = Signer.generate("bench.example/log")
    work = Path(tempfile.mkdtemp(prefix="bench-reports-")) / "log"
    t = time.perf_counter()
    size = build(work, args.servers, args.versions, signer)
    print(
        f"log: {size:,} entries ({args.servers:,} servers x {args.versions} versions), "
        f"built in {time.perf_counter() - t:.1f} s"
    )

    t = time.perf_counter()
    assert verify_log(work, signer.verifier).ok
    audit_s = time.perf_counter() - t
    print(f"baseline, full audit: {audit_s:.2f} s ({size / audit_s:,.0f} entries/s)")

    t = time.perf_counter()
    view = load_view(work, signer.verifier)
    view_s = time.perf_counter() - t
    explained = sum(1 for c in view.changes if not c.first)
    print(
        f"load_view (audit + explain {explained:,} changes): {view_s:.2f} s "
        f"({size / view_s:,.0f} entries/s, {view_s / audit_s:.1f}x the audit)"
    )

    cache = work.parent / "explain-cache.json"
    t = time.perf_counter()
    load_view(work, signer.verifier, cache=cache)
    cold_s = time.perf_counter() - t
    t = time.perf_counter()
    load_view(work, signer.verifier, cache=cache)
    warm_s = time.perf_counter() - t
    print(
        f"load_view with an explanation cache: cold {cold_s:.2f} s, warm {warm_s:.2f} s "
        f"({warm_s / audit_s:.1f}x the audit; cache {cache.stat().st_size / 1e6:.1f} MB)"
    )

    t = time.perf_counter()
    report = monthly_report(view, "2026-10", generated_at="2026-11-01T00:00:00Z")
    month_s = time.perf_counter() - t
    print(f"monthly report 2026-10 ({report['changes']['events']:,} changes): {month_s:.3f} s")

    t = time.perf_counter()
    since = since_report(view, old_size=size - args.servers, generated_at="2026-11-01T00:00:00Z")
    since_s = time.perf_counter() - t
    print(
        f"since-report of the last {len(since['changes']):,} entries with inclusion proofs: "
        f"{since_s:.2f} s"
    )


if __name__ == "__main__":
    main()
