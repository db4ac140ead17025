"""Benchmark ``toolpin lookup``: verifying and indexing a log, answering each tool, and the
Claude Code SessionStart hook.

Usage (from the repository root)::

    PYTHONPATH=src:. python bench/bench_lookup.py [--servers 500] [--changes 4]

The log holds ``servers x (changes + 1)`` real observation records with their definitions
blobs (appended in batches). Baselines in the same run: the audit alone
(``verify_log``, what ``toolpin log verify`` does) for the cold start, and an empty
``python3 -S -c pass`` for the hook. Prints figures only; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.lookup.lookup_helpers import server_id_of, signer, snapshot, tool

from toolpin.crawl.candidates import Candidate, PackageCoords
from toolpin.crawl.record import Observation, definitions_blob, observation_record
from toolpin.lookup.source import LogSource
from toolpin.lookup.tools import Lookup
from toolpin.publog.blobs import BlobStore
from toolpin.publog.entries import encode_entry
from toolpin.publog.tiles import TileLog
from toolpin.publog.verify import verify_log

HOOK = (
    Path(__file__).resolve().parents[1] / "plugins" / "toolpin" / "hooks" / "unprotected_servers.py"
)


def build(root: Path, servers: int, changes: int) -> str:
    key = signer()
    log = TileLog.open(root)
    blobs = BlobStore(root)
    previous: dict[str, int] = {}
    for round_ in range(changes + 1):
        batch = []
        for s in range(servers):
            name = f"io.github.example/server-{s}"
            tools = [tool(f"t{k}", f"Tool {k} of round {round_}.") for k in range(5)]
            snap = snapshot(tools)
            sid = server_id_of(name)
            cand = Candidate(id=sid, name=name, source="registry", transport="stdio",
                             package=PackageCoords("npm", f"@example/s{s}", "1.0.0"))  # fmt: skip
            obs = Observation(snap, "modern", "2026-07-28", f"2026-11-{1 + round_:02d}T04:00:00Z")
            ref = blobs.put(definitions_blob(snap))
            batch.append(
                encode_entry(observation_record(cand, obs, previous=previous.get(sid), blob=ref))
            )
            previous[sid] = log.size + len(batch) - 1
        log.append(batch, key)
    return key.verifier.text


def timed(fn, repeat: int = 5) -> float:  # type: ignore[no-untyped-def]
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--servers", type=int, default=500)
    parser.add_argument("--changes", type=int, default=4)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp())
    try:
        t0 = time.perf_counter()
        vkey = build(work / "log", args.servers, args.changes)
        entries = args.servers * (args.changes + 1)
        print(
            f"log: {entries} entries, {args.servers} servers, "
            f"built in {time.perf_counter() - t0:.1f} s"
        )
        from toolpin.publog.note import Verifier

        verifier = Verifier.from_text(vkey)
        audit = timed(lambda: verify_log(work / "log", verifier), 3)
        cold = timed(lambda: LogSource(str(work / "log"), verifier).state(), 3)
        print(f"baseline audit (verify_log): {audit * 1000:.0f} ms")
        print(f"cold start (audit + index):  {cold * 1000:.0f} ms ({cold / audit:.2f}x the audit)")
        lookup = Lookup(LogSource(str(work / "log"), verifier), home=work / "home")
        name = "io.github.example/server-7"
        lookup.call("log_status", {})
        for tool_name, tool_args in (
            ("lookup_server", {"server": name}),
            ("server_history", {"server": name}),
            ("check_definitions", {"server": name, "hash": "0" * 64}),
            ("log_status", {}),
        ):
            lookup.call(tool_name, tool_args)  # labels cached after the first call
            warm = timed(lambda n=tool_name, a=tool_args: lookup.call(n, a), 20)
            print(f"{tool_name:18s} warm: {warm * 1000:.2f} ms")
        fresh = Lookup(LogSource(str(work / "log"), verifier), home=work / "home")
        fresh.call("log_status", {})
        first = timed(lambda: fresh.call("server_history", {"server": name}), 1)
        print(
            f"server_history first call (blob compares of {args.changes} changes): "
            f"{first * 1000:.1f} ms"
        )

        home = work / "hook-home"
        home.mkdir()
        servers = {f"s{i}": {"command": "npx", "args": ["-y", f"@acme/s{i}"]} for i in range(100)}
        (home / ".claude.json").write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
        env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}

        def hook() -> None:
            subprocess.run(
                [sys.executable, "-S", str(HOOK)],
                input=b"{}",
                capture_output=True,
                env=env,
                check=True,
            )

        def empty() -> None:
            subprocess.run(
                [sys.executable, "-S", "-c", "pass"], capture_output=True, env=env, check=True
            )

        base = timed(empty, 10)
        hooked = timed(hook, 10)
        print(f"hook, 100 servers: {hooked * 1000:.1f} ms (empty interpreter {base * 1000:.1f} ms)")

        # the same note once 50 skills (3 files each, 1.4 MB in all) are pinned: the hook
        # then computes each folder's tree digest (changed_skills.py)
        from toolpin.skills.check import pin
        from toolpin.skills.locate import known
        from toolpin.skills.store import SkillStore

        for i in range(50):
            skill = home / ".claude" / "skills" / f"s{i}"
            (skill / "scripts").mkdir(parents=True)
            (skill / "SKILL.md").write_text(f"---\nname: s{i}\n---\nbody {i}\n", "utf-8")
            (skill / "reference.md").write_text("word " * 5400, "utf-8")
            (skill / "scripts" / "run.sh").write_text("echo run\n", "utf-8")
        pin(known(work, {"HOME": str(home)}), SkillStore(work / "skills-home"))
        env["TOOLPIN_HOME"] = str(work / "skills-home")
        skilled = timed(hook, 10)
        print(f"hook, 100 servers and 50 pinned skills: {skilled * 1000:.1f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
