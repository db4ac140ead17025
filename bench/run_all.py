"""Run every benchmark script in this folder and print their figures (``make bench``).

Benchmarks print figures and ratios against a baseline measured in the same run; they
assert nothing (speed is measured here, never in timed tests).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def main() -> int:
    here = Path(__file__).resolve().parent
    scripts = sorted(p for p in here.glob("bench_*.py"))
    failed = 0
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        result = subprocess.run([sys.executable, str(script), *sys.argv[1:]], check=False)
        if result.returncode != 0:
            failed += 1
            print(f"{script.name} exited with {result.returncode}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
