"""Benchmark one ``toolpin log monitor`` pass over a large log: peak memory and time.

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_monitor.py [--entries 100000,200000] [--http]
    PYTHONPATH=src python bench/bench_monitor.py --entries 1000000 --http

Builds, with publog's writer (``TileLog.append``, batches of 16,384), a log of each size of
small observation records (16 servers), then runs a first pass of the monitor over it (every
entry bundle fetched and proven against the signed checkpoint, one watched server reported)
in a fresh process, and prints that process's peak RSS (``ru_maxrss``) and wall time. The
baseline, measured in the same run: the same pass in a fresh process over a log of 256
entries (one bundle), i.e. the interpreter, the imports and one proven bundle. ``--http``
also serves each log on 127.0.0.1 and runs the pass over HTTP (the guarded fetcher).
Prints figures only; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "evidence"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "site"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "monitor"))

from evidence_helpers import serve_folder
from monitor_helpers import plain_log

from toolpin.publog.note import Signer

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from toolpin.monitor.follow import Watch, monitor
from toolpin.publog.note import Verifier
log, vkey, state = sys.argv[1:4]
start = time.perf_counter()
reported = []
def emit(event):
    reported.append(None)  # counted, not kept: the command prints each event and drops it
result = monitor(log, Verifier.from_text(vkey), state_path=Path(state),
                 watch=Watch(frozenset({"srv-3"})), emit=emit, allow_private=True)
seconds = time.perf_counter() - start
print(json.dumps({"exit": result.exit_code, "checked": result.checked,
                  "reported": len(reported), "seconds": seconds,
                  "max_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def build(path: Path, count: int, key: Signer) -> float:
    start = time.perf_counter()
    plain_log(path, count, key)
    return time.perf_counter() - start


def one_pass(log: str, vkey: str, state: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, log, vkey, str(state)],
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, float] = json.loads(done.stdout)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", default="100000,200000", help="log sizes, comma-separated")
    parser.add_argument("--http", action="store_true", help="also run each pass over HTTP")
    options = parser.parse_args()
    sizes = [int(x) for x in options.entries.split(",") if x]

    key = Signer.generate("bench.example/log")
    vkey = key.verifier.text
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows = []
        for count in [256, *sizes]:
            log = root / f"log-{count}"
            built = build(log, count, key)
            modes = [("folder", str(log))]
            server = None
            if options.http:
                server = serve_folder(log)
                modes.append(("http", server.url))
            for mode, where in modes:
                figures = one_pass(where, vkey, root / f"state-{count}-{mode}.json")
                rows.append((count, mode, built, figures))
                print(
                    f"{count:>9,} entries ({mode:6}): pass {figures['seconds']:7.2f} s, "
                    f"peak RSS {figures['max_rss_kib'] / 1024:6.1f} MiB, "
                    f"{figures['checked']:,.0f} entries proven, {figures['reported']:,.0f} "
                    f"reported (log built in {built:.1f} s)",
                    flush=True,
                )
            if server is not None:
                server.close()
        base = {mode: f["max_rss_kib"] for count, mode, _, f in rows if count == 256}
        for count, mode, _, figures in rows:
            if count != 256:
                extra = (figures["max_rss_kib"] - base[mode]) / 1024
                print(
                    f"{count:>9,} entries ({mode:6}): {extra:+.1f} MiB over the 256-entry baseline"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
