"""Run every benchmark script in this folder and print their figures (``make bench``).

Benchmarks print figures and ratios against a baseline measured in the same run; they
assert nothing (speed is measured here, never in timed tests).

``--record docs/benchmarks.md`` also writes what the scripts printed into that file's
``<!-- latest-run:begin -->`` ... ``<!-- latest-run:end -->`` block, with the date, the
commit and the machine (CPU count and model, OS, Python, load average); the rest of the
file (the dated sections of earlier runs) is kept as it is. ``--only NAME`` (repeatable,
``bench_offline`` or ``bench_offline.py``) runs only those scripts; any other argument is
passed to every script run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
from pathlib import Path

BEGIN = "<!-- latest-run:begin -->"
END = "<!-- latest-run:end -->"


def cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or "unknown CPU"
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def machine() -> str:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (
        f"{os.cpu_count()} CPUs ({cpu_model()}), {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, load average {load} before the run"
    )


def commit(repo: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "unknown"


def record_block(text: str, block: str) -> str:
    """``text`` with the latest-run block replaced by ``block``; everything else kept."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError(f"the file needs exactly one {BEGIN} ... {END} block")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{block.strip()}\n{END}{tail}"


def render_block(
    when: dt.datetime, where: str, revision: str, command: str, runs: list[tuple[str, int, str]]
) -> str:
    lines = [
        f"Recorded {when:%Y-%m-%d %H:%M} UTC at toolpin `{revision}` with `{command}`.",
        "",
        f"Machine: {where}.",
    ]
    for name, code, output in runs:
        status = "" if code == 0 else f" (exited with {code})"
        lines += ["", f"### {name}{status}", "", "```text", output.rstrip(), "```"]
    return "\n".join(lines)


def run(script: Path, args: list[str]) -> tuple[int, str]:
    """Run one script, printing its output as it comes, and return its code and output."""
    process = subprocess.Popen(
        [sys.executable, str(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    captured = []
    for line in process.stdout:
        print(line, end="", flush=True)
        captured.append(line)
    return process.wait(), "".join(captured)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", metavar="FILE", help="write the latest-run block of FILE")
    parser.add_argument("--only", action="append", default=[], metavar="NAME")
    options, passed = parser.parse_known_args(argv)
    here = Path(__file__).resolve().parent
    wanted = {name.removesuffix(".py") for name in options.only}
    scripts = sorted(p for p in here.glob("bench_*.py") if not wanted or p.stem in wanted)
    if wanted - {p.stem for p in scripts}:
        print(f"no such benchmark: {', '.join(sorted(wanted - {p.stem for p in scripts}))}")
        return 2
    target = Path(options.record) if options.record else None
    if target is not None:
        record_block(target.read_text(encoding="utf-8"), "")  # a file without the block: stop now
    started = dt.datetime.now(dt.UTC)
    where = machine()
    runs = []
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        code, output = run(script, passed)
        if code != 0:
            print(f"{script.name} exited with {code}", flush=True)
        runs.append((script.name, code, output))
    if target is not None:
        given = argv if argv is not None else sys.argv[1:]
        command = " ".join(["python bench/run_all.py", *given])
        block = render_block(started, where, commit(here.parent), command, runs)
        target.write_text(record_block(target.read_text(encoding="utf-8"), block), encoding="utf-8")
        print(f"\nrecorded this run in {target}")
    return 1 if any(code != 0 for _, code, _ in runs) else 0


if __name__ == "__main__":
    raise SystemExit(main())
