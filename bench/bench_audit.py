"""Benchmark the local audit log's append, which verifies the chain before it writes.

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_audit.py [--entries 10000] [--appends 50]

Writes a log of ``--entries`` entries shaped like the proxy's (drift events with label
keys), then times: an append with the ``audit.log.verified`` cache in place (the prefix is
re-hashed, only the new entries walked), an append without it (the whole chain walked once,
as for a log written by an older toolpin) and ``toolpin verify``'s full walk, against a
baseline measured in the same run: one line written and fsynced, unchecked. Every append
is fsynced, so disk speed is part of each figure. Prints figures only; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from toolpin.pins import audit


def _fields(i: int) -> dict[str, object]:
    return {
        "server": f"{i:016x}",
        "label": f"server number {i}",
        "pinned": "a" * 64,
        "observed": "b" * 64,
        "midSession": False,
        "changes": [f"tool:t{i}:description", f"tool:t{i}:inputSchema.properties.q"],
    }


def _ms(times: list[float]) -> str:
    return f"median {statistics.median(times) * 1000:.2f} ms, max {max(times) * 1000:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--appends", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "audit.log"
        prev, lines = audit.GENESIS, []
        for i in range(args.entries):  # the chain written directly (appends fsync each)
            entry = {"seq": i, "prev": prev, "at": audit.now_iso(), "event": "drift"}
            entry.update(_fields(i))
            entry["hash"] = prev = audit._entry_hash(entry)
            lines.append(json.dumps(entry, separators=(",", ":")) + "\n")
        log.write_text("".join(lines), encoding="utf-8")
        print(f"log: {args.entries:,} entries, {log.stat().st_size / 1e6:.1f} MB")
        audit.append(log, "drift", _fields(0))  # the first append walks it all once

        baseline = []  # what any append costs: one line written and fsynced, no check
        plain = Path(tmp) / "plain.log"
        for _ in range(args.appends):
            t = time.perf_counter()
            fd = os.open(plain, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.write(fd, b"x" * 400 + b"\n")
            os.fsync(fd)
            os.close(fd)
            baseline.append(time.perf_counter() - t)
        print(f"baseline, one line written and fsynced: {_ms(baseline)}")

        cached = []
        for i in range(args.appends):
            t = time.perf_counter()
            audit.append(log, "drift", _fields(i))
            cached.append(time.perf_counter() - t)
        ratio = statistics.median(cached) / statistics.median(baseline)
        print(f"append, cache in place: {_ms(cached)} ({ratio:.1f}x the baseline)")

        cold = []
        cache = log.with_name(log.name + audit.VERIFIED_SUFFIX)
        for i in range(max(3, args.appends // 10)):
            cache.unlink()
            t = time.perf_counter()
            audit.append(log, "drift", _fields(i))
            cold.append(time.perf_counter() - t)
        print(f"append, no cache (full walk): {_ms(cold)}")

        full = []
        for _ in range(3):
            t = time.perf_counter()
            report = audit.verify_chain(log)
            full.append(time.perf_counter() - t)
        print(f"verify (full walk of {report.entries:,}): {_ms(full)}")


if __name__ == "__main__":
    main()
