"""Benchmark the public log engine: append, full audit, inclusion and consistency proofs.

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_tlog.py [--entries 100000] [--batch 1000] [--dir DIR]

Entries are synthetic observation records of about 600 bytes (RFC 8785 JSON). Prints
figures only; asserts nothing. The log is written to a temporary directory (removed at the
end) unless --dir is given. Every file write is fsynced, so disk speed matters.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from toolpin.publog.entries import encode_entry
from toolpin.publog.merkle import leaf_hash, verify_consistency, verify_inclusion
from toolpin.publog.note import Signer
from toolpin.publog.proof import make_proof, verify_proof
from toolpin.publog.tiles import TileLog
from toolpin.publog.verify import verify_log


def synthetic_entry(i: int) -> bytes:
    digest = hashlib.sha256(str(i).encode()).hexdigest()
    record = {
        "v": 1,
        "server": {
            "name": f"io.github.example/server-{i % 5000}",
            "source": "registry",
            "package": {"ecosystem": "npm", "name": f"@example/mcp-{i % 5000}", "version": "1.2.3"},
            "transport": "stdio",
        },
        "observed_at": f"2026-07-{1 + i % 28:02d}T12:00:00Z",
        "protocol_version": "2025-11-25",
        "digests": {
            "tools": "sha256:" + digest,
            "prompts": "sha256:" + digest[::-1],
            "resources": "sha256:" + hashlib.sha256(digest.encode()).hexdigest(),
            "surface": "sha256:" + hashlib.sha256(digest[:32].encode()).hexdigest(),
        },
    }
    return encode_entry(record)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()

    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-tlog-"))
    log_dir = work / "log"
    shutil.rmtree(log_dir, ignore_errors=True)
    signer = Signer.generate("bench.example/log")
    rng = random.Random(7)

    t = time.perf_counter()
    entries = [synthetic_entry(i) for i in range(args.entries)]
    build_s = time.perf_counter() - t
    mean_size = statistics.mean(len(e) for e in entries)
    print(
        f"entries: {len(entries):,} synthetic records, mean {mean_size:.0f} bytes "
        f"(built and canonicalised in {build_s:.2f} s)"
    )

    log = TileLog.open(log_dir)
    t = time.perf_counter()
    for start in range(0, len(entries), args.batch):
        log.append(entries[start : start + args.batch], signer)
    append_s = time.perf_counter() - t
    appends = -(-len(entries) // args.batch)
    print(
        f"append: {len(entries) / append_s:,.0f} entries/s "
        f"({appends} appends of {args.batch}, {append_s:.2f} s, "
        f"{append_s / appends * 1000:.1f} ms per append)"
    )
    files = [p for p in log_dir.rglob("*") if p.is_file()]
    disk = sum(p.stat().st_size for p in files)
    print(f"log directory: {len(files):,} files, {disk / 1e6:.1f} MB")

    t = time.perf_counter()
    result = verify_log(log_dir, signer.verifier)
    verify_s = time.perf_counter() - t
    print(
        f"verify (full audit): {result.entries / verify_s:,.0f} entries/s "
        f"({verify_s:.2f} s, ok={result.ok})"
    )

    size = log.size
    root = log.root()
    indexes = [rng.randrange(size) for _ in range(200)]
    t = time.perf_counter()
    proofs = [log.inclusion_proof(i) for i in indexes]
    incl_s = (time.perf_counter() - t) / len(indexes)
    hashes = statistics.mean(len(p) for p in proofs)
    t = time.perf_counter()
    for i, p in zip(indexes, proofs, strict=True):
        assert verify_inclusion(leaf_hash(entries[i]), i, size, p, root)
    check_s = (time.perf_counter() - t) / len(indexes)
    print(
        f"inclusion proof at {size:,}: {hashes:.1f} hashes ({hashes * 32:.0f} bytes), "
        f"built from tiles in {incl_s * 1000:.2f} ms, verified in {check_s * 1e6:.0f} us"
    )

    t = time.perf_counter()
    texts = [make_proof(log, i) for i in indexes[:50]]
    make_s = (time.perf_counter() - t) / 50
    t = time.perf_counter()
    for i, text in zip(indexes[:50], texts, strict=True):
        verify_proof(text, entries[i], signer.verifier)
    vp_s = (time.perf_counter() - t) / 50
    print(
        f"tlog-proof text: {statistics.mean(len(x) for x in texts):.0f} bytes, "
        f"made in {make_s * 1000:.2f} ms, verified offline in {vp_s * 1000:.2f} ms "
        "(incl. Ed25519)"
    )

    olds = [rng.randrange(1, size) for _ in range(200)]
    roots = {o: log.root(o) for o in olds}
    t = time.perf_counter()
    cproofs = [log.consistency_proof(o) for o in olds]
    cons_s = (time.perf_counter() - t) / len(olds)
    t = time.perf_counter()
    for o, p in zip(olds, cproofs, strict=True):
        assert verify_consistency(o, size, roots[o], root, p)
    cver_s = (time.perf_counter() - t) / len(olds)
    print(
        f"consistency proof to {size:,}: {statistics.mean(len(p) for p in cproofs):.1f} "
        f"hashes, built from tiles in {cons_s * 1000:.2f} ms, verified in {cver_s * 1e6:.0f} us"
    )

    if not args.dir:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
