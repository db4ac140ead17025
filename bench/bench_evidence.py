"""Benchmark a verified digest lookup (``toolpin.evidence.look_up``) on loopback.

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_evidence.py [--servers 1500] [--runs 30]

Builds a log of ``--servers`` servers (one entry each, with the crawler's record code) and
its site, serves the site folder on 127.0.0.1, and times, against a baseline measured in
the same run (one HTTP GET of ``checkpoint`` on the same server, through the same guarded
client, a new client each time as a lookup makes):

* a hit and a miss with a warm kept checkpoint (the log has not moved since);
* a hit after the log grew by one crawl batch (the consistency proof from the kept
  checkpoint is fetched from tiles);
* a cold hit (nothing kept: first use).

Also the bytes and requests the server answered per lookup. Prints figures only; asserts
nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "site"))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "evidence"))

from evidence_helpers import entries, serve_folder, site_of
from site_helpers import LogWriter, tool

from toolpin.evidence import LogRef, look_up
from toolpin.evidence.state import reset


def _ms(times: list[float]) -> str:
    return f"median {statistics.median(times) * 1000:.2f} ms, max {max(times) * 1000:.2f} ms"


def _baseline(url: str, runs: int) -> list[float]:
    from toolpin.probe.ssrf import AddressPolicy, GuardedClient

    times = []
    for _ in range(runs):
        start = time.perf_counter()
        with (
            GuardedClient(
                AddressPolicy(allow_private=True), timeout=3.0, user_agent="b", trust_env=True
            ) as client,
            client.stream("GET", url + "checkpoint", headers={}) as response,
        ):
            response.read()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--servers", type=int, default=1500)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        writer = LogWriter(root / "log")
        for n in range(args.servers):
            writer.observe(f"server-{n}", [tool(f"t{n}"), tool("common")], "2026-11-01T03:00:00Z")
        writer.commit()
        started = time.perf_counter()
        site = site_of(writer, root / "site")
        print(f"log: {args.servers:,} entries; site built in {time.perf_counter() - started:.1f} s")
        logged = entries(writer.path)
        hit = logged[args.servers // 2]["digests"]["surface"]
        miss = "ab" * 32
        served = serve_folder(root / "www")
        served.show(site)
        ref = LogRef(served.url, writer.vkey)
        home = root / "home"

        def timed(digest: str, *, cold: bool = False) -> tuple[float, int, int]:
            if cold:
                reset(home, writer.key.name)
            sent, requests = served.sent, served.requests
            start = time.perf_counter()
            look_up(ref, digest, home=home, allow_private=True)
            elapsed = time.perf_counter() - start
            return elapsed, served.sent - sent, served.requests - requests

        look_up(ref, hit, home=home, allow_private=True)  # warm: a checkpoint is kept
        base = _baseline(served.url, args.runs)
        print(f"baseline, one GET of checkpoint: {_ms(base)}")
        for label, digest, cold in (
            ("warm hit", hit, False),
            ("warm miss", miss, False),
            ("cold hit (nothing kept)", hit, True),
        ):
            runs = [timed(digest, cold=cold) for _ in range(args.runs)]
            times = [r[0] for r in runs]
            added = (statistics.median(times) - statistics.median(base)) * 1000
            print(
                f"{label}: {_ms(times)}; +{added:.2f} ms over the baseline; "
                f"{runs[0][1]:,} bytes in {runs[0][2]} requests"
            )
        grown = []
        for n in range(5):
            reset(home, writer.key.name)
            look_up(ref, hit, home=home, allow_private=True)
            for k in range(20):
                writer.observe(f"new-{n}-{k}", [tool(f"n{n}{k}")], "2026-11-02T03:00:00Z")
            writer.commit()
            served.show(site_of(writer, root / f"site{n}"))
            grown.append(timed(hit))
        times = [r[0] for r in grown]
        print(
            f"hit after the log grew by 20 entries (consistency proof): {_ms(times)}; "
            f"{grown[0][1]:,} bytes in {grown[0][2]} requests"
        )
        served.close()


if __name__ == "__main__":
    main()
