"""Benchmark what ``--log`` adds to ``toolpin run``: a first pin checked against a public
log on loopback, with a warm kept checkpoint.

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_public_pin.py [--runs 15]

Builds a small log and its site (the crawler's record code, ``toolpin.site.build``),
serves it on 127.0.0.1, looks one digest up once (so the kept checkpoint is warm), then
times, alternating, from starting ``toolpin run`` in front of the scripted server to the
client's ``initialize`` answer:

* a first pin without a log (the baseline);
* a first pin with ``--log`` (the proxy fetches and verifies the checkpoint while the
  server boots, then waits for the rest of the verified lookup before it releases);
* a session whose pin matches, with ``--log`` (no lookup is made: it should cost what
  the baseline's matched session costs).

Each session's CPU time (user + system, of the proxy and the server it started: the
children's resource usage once they have exited) is printed too: on a loaded machine
the wall times mostly measure waiting for a core, the CPU times what the lookup costs.

Prints figures only; asserts nothing.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.proxy.harness import Proxy, Scripted, proxy_env  # noqa: E402
from tests.proxy.test_proxy_public_log import V1, record  # noqa: E402
from tests.site.site_helpers import NOW, LogWriter, serve, tool  # noqa: E402

from toolpin.publog.note import Verifier  # noqa: E402
from toolpin.site.build import build_site, parse_now  # noqa: E402


def _ms(times: list[float]) -> str:
    return f"median {statistics.median(times) * 1000:.1f} ms, min {min(times) * 1000:.1f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args, _ = parser.parse_known_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        writer = LogWriter(root / "log")
        record(writer, "calc", V1, "2026-11-20T03:00:00Z")
        record(writer, "other", [tool("ping")], "2026-11-20T04:00:00Z")
        writer.commit()
        build_site(root / "log", Verifier.from_text(writer.vkey), root / "out", now=parse_now(NOW))
        (root / "log.vkey").write_text(writer.vkey + "\n", encoding="utf-8")
        server, url = serve(root / "out")
        home = root / "home"
        env = proxy_env(home, TOOLPIN_LOG_ALLOW_PRIVATE="1")
        log = ["--log", url, "--vkey", str(root / "log.vkey")]

        cpu: dict[str, list[float]] = {"plain": [], "public": [], "matched": []}

        def children_cpu() -> float:
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            return usage.ru_utime + usage.ru_stime

        def session(where: str, *options: str, kind: str = "") -> float:
            scripted = Scripted(root / where, tools=V1)
            before = children_cpu()
            start = time.perf_counter()
            proxy = Proxy(home, scripted.argv, *options, env=env)
            proxy.initialize()
            took = time.perf_counter() - start
            proxy.check_readers = False
            proxy.close()
            if kind:
                cpu[kind].append(children_cpu() - before)
            return took

        session("warm", *log)  # the kept checkpoint is warm from here on
        plain: list[float] = []
        public: list[float] = []
        matched: list[float] = []
        for i in range(args.runs):
            plain.append(session(f"plain{i}", kind="plain"))
            public.append(session(f"public{i}", *log, kind="public"))
            # The same server again: its pin matches.
            matched.append(session(f"public{i}", *log, kind="matched"))
        server.shutdown()
        server.server_close()
    added = statistics.median(public) - statistics.median(plain)
    print(f"first pin without a log:                {_ms(plain)}")
    print(f"first pin with --log (warm checkpoint): {_ms(public)}")
    print(f"  added by the lookup (medians):        {added * 1000:.1f} ms")
    print(f"matched session with --log (no lookup): {_ms(matched)}")
    cpu_added = statistics.median(cpu["public"]) - statistics.median(cpu["plain"])
    print(f"CPU, first pin without a log:           {_ms(cpu['plain'])}")
    print(f"CPU, first pin with --log:              {_ms(cpu['public'])}")
    print(f"  CPU added by the lookup (medians):    {cpu_added * 1000:.1f} ms")
    print(f"CPU, matched session with --log:        {_ms(cpu['matched'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
