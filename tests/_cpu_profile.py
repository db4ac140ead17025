"""Per-test CPU time: an opt-in pytest plugin and the report over what it wrote.

``TOOLPIN_CPU_PROFILE=DIR pytest ...`` (``tests/conftest.py`` registers this plugin when
the variable is set, in every worker) writes one JSON line per
test to ``DIR/cpu-<worker>.jsonl`` (``gw0``, ``gw1``, ... under xdist, ``main`` without):
the test's id, the worker, and the wall, user and system time of the whole
``pytest_runtest_protocol`` (setup, call and teardown, so a session fixture's build is
charged to the first test that asks for it), split into the worker's own CPU and its
children's (every subprocess the test started and waited for: pip, npm, uvx, the proxy,
Chromium). Without the variable the plugin does nothing.

``python tests/_cpu_profile.py DIR [N]`` prints the N (default 30) tests that used the most
CPU, then the modules, from every file in DIR (docs/testing.md, *Where the CPU goes*).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Generator
from pathlib import Path

import pytest

ENV = "TOOLPIN_CPU_PROFILE"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    folder = os.environ.get(ENV)
    if not folder:
        yield
        return
    before, wall = os.times(), time.monotonic()
    yield
    after, wall = os.times(), time.monotonic() - wall
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    line = {
        "test": item.nodeid,
        "worker": worker,
        "wall": round(wall, 3),
        "user": round(after.user - before.user, 3),
        "sys": round(after.system - before.system, 3),
        "child_user": round(after.children_user - before.children_user, 3),
        "child_sys": round(after.children_system - before.children_system, 3),
    }
    Path(folder).mkdir(parents=True, exist_ok=True)
    with open(Path(folder) / f"cpu-{worker}.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps(line, sort_keys=True) + "\n")


def cpu(line: dict[str, object]) -> float:
    """A test's CPU time: its worker's and its children's, user and system."""
    keys = ("user", "sys", "child_user", "child_sys")
    return sum(float(line[k]) for k in keys)  # type: ignore[arg-type]


def report(folder: Path, top: int = 30) -> str:
    lines = [
        json.loads(text)
        for path in sorted(folder.glob("cpu-*.jsonl"))
        for text in path.read_text(encoding="utf-8").splitlines()
        if text.strip()
    ]
    lines.sort(key=lambda line: (-cpu(line), line["test"]))
    total = sum(cpu(line) for line in lines)
    out = [f"{len(lines)} tests, {total:.1f} s CPU (user+sys, own+children)", ""]
    out.append(f"{'cpu s':>8} {'own':>7} {'child':>7} {'wall s':>8}  test")
    for line in lines[:top]:
        own = float(line["user"]) + float(line["sys"])
        child = float(line["child_user"]) + float(line["child_sys"])
        out.append(f"{cpu(line):8.1f} {own:7.1f} {child:7.1f} {line['wall']:8.1f}  {line['test']}")
    modules: dict[str, list[float]] = {}
    for line in lines:
        entry = modules.setdefault(str(line["test"]).split("::", 1)[0], [0.0, 0.0, 0])
        entry[0] += cpu(line)
        entry[1] += float(line["wall"])  # type: ignore[arg-type]
        entry[2] += 1
    out += ["", f"{'cpu s':>8} {'wall s':>8} {'tests':>6}  module"]
    for name, (c, w, n) in sorted(modules.items(), key=lambda kv: (-kv[1][0], kv[0]))[:top]:
        out.append(f"{c:8.1f} {w:8.1f} {int(n):6d}  {name}")
    return "\n".join(out)


if __name__ == "__main__":
    print(report(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 30))
