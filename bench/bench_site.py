"""Benchmark `toolpin log site`: a full build, then an unchanged rebuild (incremental).

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_site.py [--servers 20000] [--entries 100000]
        [--new 1000] [--dir DIR] [--reuse DIR]

The log is written with the crawler's own record code (one entry per new or changed
surface, definitions in blobs): every server is first recorded once, then the remaining
entries are changes of randomly chosen servers (seeded, so runs compare). Measured, in
this order: a full build of ``--entries`` entries into an empty folder with an empty cache
(first, so that no earlier build of this run has filled the kernel's inode and dentry
caches, which slows creating files on a machine with small hash tables for them), an
unchanged rebuild, then ``--new`` more entries are appended and the site is built again
(incremental, with the cache the first build kept), and the grown log is built into a new
folder with the cache and without (new folders, so that no mass deletion slows the file
system during a measured build). The kernel's cached inodes and dentries are printed
before the first build and after the last, and what creating a small file costs before
the first build and after the incremental one (the file system's state, see
:func:`_create_probe`). Baseline, in the same run: ``verify_log`` of
the same log, which every build must do first. Prints figures only; asserts nothing. The
work folder is removed at the end unless --dir is given.

``--reuse DIR`` keeps the generated log between runs (writing it takes about as long as
the builds): ``DIR/log-<servers>-<entries>`` (the log before the append) and
``DIR/log-<servers>-<entries+new>`` (after it) are written once, by the same seeded plan;
each run copies the first into its work folder (hard links: the log's files are replaced
atomically, never written in place) and, for the append, brings in the files that the
second has and the first lacks or holds differently (what ``TileLog.append`` would have
written), so the builds see the same log, in the same folder, as in a run that writes it.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from toolpin.core.snapshot import Kind, Listing, Snapshot
from toolpin.crawl.candidates import Candidate, PackageCoords, crawl_id
from toolpin.crawl.record import Observation, definitions_blob, observation_record
from toolpin.publog.blobs import BlobStore
from toolpin.publog.entries import encode_entry
from toolpin.publog.note import Signer
from toolpin.publog.tiles import TileLog
from toolpin.publog.verify import verify_log
from toolpin.site.build import build_site, parse_now

NOW = "2026-12-01T12:00:00Z"


def _tools(server: int, version: int) -> list[dict[str, Any]]:
    props: dict[str, Any] = {"query": {"type": "string", "description": "what to look up"}}
    if version % 3 == 2:
        props["limit"] = {"type": "integer", "maximum": 10 * version}
    return [
        {
            "name": "search",
            "description": f"Search the index of server {server}. Revision {version // 2}.",
            "inputSchema": {"type": "object", "properties": props, "required": ["query"]},
        },
        {
            "name": "fetch",
            "description": "Fetch one document by id.",
            "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
        },
        {
            "name": f"tool_{version % 4}",
            "description": "An extra tool.",
            "inputSchema": {"type": "object"},
        },
    ]


def _stamp(day: int, server: int) -> str:
    base = time.gmtime(time.mktime((2026, 6, 1, 0, 0, 0, 0, 0, 0)) + day * 86400 + server % 86400)
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", base)


class BenchLog:
    """The bench's log, written in stages (the plan of every entry is fixed up front)."""

    def __init__(self, path: Path, servers: int, entries: int, signer: Signer) -> None:
        rng = random.Random(12)
        self.path, self.signer = path, signer
        self.log = TileLog.open(path)
        self.blobs = BlobStore(path)
        self.versions = [0] * servers
        self.last: dict[int, int] = {}
        self.looked: dict[int, str] = {}
        self.plan = list(range(servers)) + [
            rng.randrange(servers) for _ in range(entries - servers)
        ]
        self.days = sorted(rng.randrange(180) for _ in self.plan)
        self.done = self.log.size

    def write(self, upto: int) -> None:
        """Append the planned entries up to ``upto`` (in batches of 5,000, each signed)."""
        batch: list[bytes] = []
        for n in range(self.done, upto):
            server, day = self.plan[n], self.days[n]
            version = self.versions[server]
            self.versions[server] += 1
            name = f"io.github.example/server-{server}"
            cand = Candidate(
                id=crawl_id("registry", name),
                name=name,
                source="registry",
                transport="stdio",
                package=PackageCoords("npm", f"@example/mcp-{server}", f"1.{version}.0"),
            )
            snap = Snapshot.of_listings(
                {Kind.TOOL: Listing.parse(Kind.TOOL, _tools(server, version))},
                instructions=None,
                instructions_known=True,
            )
            at = _stamp(day, server)
            obs = Observation(
                snapshot=snap, era="handshake", protocol_version="2025-11-25", observed_at=at
            )
            ref = self.blobs.put(definitions_blob(snap))
            record = observation_record(
                cand,
                obs,
                previous=self.last.get(server),
                blob=ref,
                previous_look=self.looked.get(server),
                change="new" if server not in self.last else "definitions",
            )
            self.last[server] = n
            self.looked[server] = at
            batch.append(encode_entry(record))
            if len(batch) == 5000:
                self.log.append(batch, self.signer)
                batch = []
        if batch:
            self.log.append(batch, self.signer)
        self.done = upto


def _staged_logs(
    reuse: Path, servers: int, entries: int, new: int, signer: Signer
) -> tuple[Path, Path]:
    """The two kept logs of ``--reuse`` (written here when absent)."""
    before = reuse / f"log-{servers}-{entries}"
    after = reuse / f"log-{servers}-{entries + new}"
    if (before / "checkpoint").exists() and (after / "checkpoint").exists():
        return before, after
    reuse.mkdir(parents=True, exist_ok=True)
    for folder in (before, after):
        shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    log = BenchLog(before, servers, entries + new, signer)
    log.write(entries)
    shutil.copytree(before, after, copy_function=shutil.copy2)
    log.path, log.log, log.blobs = after, TileLog.open(after), BlobStore(after)
    log.write(entries + new)
    print(f"wrote the kept logs into {reuse} in {time.perf_counter() - started:.1f} s")
    return before, after


def _link_tree(source: Path, target: Path) -> None:
    """``target``: ``source``'s files, hard-linked."""
    shutil.copytree(source, target, copy_function=os.link)


def _grow(source: Path, target: Path) -> None:
    """Bring ``target`` to ``source``: the files it lacks, or holds with other bytes
    (replaced, as the log replaces them), the checkpoint last; none is removed (an
    append removes only stray partial files, which these logs do not have)."""
    later: list[Path] = []
    for path in sorted(source.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(source)
        there = target / rel
        if rel.as_posix() == "checkpoint":
            later.append(path)
            continue
        if there.exists() and there.read_bytes() == path.read_bytes():
            continue
        there.parent.mkdir(parents=True, exist_ok=True)
        tmp = there.with_name(there.name + ".tmp")
        shutil.copy2(path, tmp)
        os.replace(tmp, there)
    for path in later:
        tmp = target / "checkpoint.tmp"
        shutil.copy2(path, tmp)
        os.replace(tmp, target / "checkpoint")


def _kernel_caches() -> str:
    """How many inodes and dentries the kernel holds (Linux): creating a file walks hash
    chains whose length grows with them, so a build on a machine that has created
    millions of files (and has the memory to keep them cached) is slower."""
    try:
        inodes = int(Path("/proc/sys/fs/inode-nr").read_text().split()[0])
        dentries = int(Path("/proc/sys/fs/dentry-state").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return "not known"
    return f"{inodes:,} inodes, {dentries:,} dentries cached"


def _create_probe(folder: Path, count: int = 10_000) -> str:
    """What creating a small file costs now, in a new folder kept until the end (deleting
    the probe would itself slow the next files). On ext4 it moves by an order of magnitude:
    allocating an inode skips those freed in the last minutes (``recently_deleted``), so a
    build soon after many files were deleted or replaced creates its files slowly."""
    folder.mkdir()
    data = b"x" * 3000
    before = os.times()
    started = time.perf_counter()
    for n in range(count):
        fd = os.open(folder / f"{n}.html", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, data)
        os.close(fd)
    took = time.perf_counter() - started
    system = os.times().system - before.system
    return f"{took / count * 1e6:.0f} us per file ({system / count * 1e6:.0f} us system)"


def _timed(label: str, build: Any, baseline: float) -> Any:
    before = os.times()
    started = time.perf_counter()
    result = build()
    took = time.perf_counter() - started
    after = os.times()
    user = after.user + after.children_user - before.user - before.children_user
    system = after.system + after.children_system - before.system - before.children_system
    print(
        f"{label}: {took:.1f} s ({took / baseline:.1f}x verify_log; CPU {user:.1f} s user, "
        f"{system:.1f} s system), {result.files:,} files, {result.written:,} written, "
        f"{result.unchanged:,} unchanged, {result.removed} removed"
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=20_000)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument(
        "--new", type=int, default=1000, help="entries appended before the incremental build"
    )
    parser.add_argument("--dir", default=None, help="a new folder to work in (kept)")
    parser.add_argument(
        "--reuse", default=None, help="a folder that keeps the generated log between runs"
    )
    args = parser.parse_args()
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-site-"))
    signer = Signer.from_seed("bench.example/log", b"\x07" * 32)
    try:
        log_dir = work / "log"
        if (log_dir / "checkpoint").exists():
            raise SystemExit(f"{log_dir} exists: give a new --dir (the log is written in stages)")
        started = time.perf_counter()
        kept_logs = None
        if args.reuse:
            kept_logs = _staged_logs(Path(args.reuse), args.servers, args.entries, args.new, signer)
            work.mkdir(parents=True, exist_ok=True)
            _link_tree(kept_logs[0], log_dir)
            print(f"the log: {args.entries:,} entries, {args.servers:,} servers, from {args.reuse}")
        else:
            log = BenchLog(log_dir, args.servers, args.entries + args.new, signer)
            log.write(args.entries)
            print(
                f"wrote the log: {args.entries:,} entries, {args.servers:,} servers "
                f"in {time.perf_counter() - started:.1f} s (setup, not measured)"
            )
        started = time.perf_counter()
        result = verify_log(log_dir, signer.verifier)
        baseline = time.perf_counter() - started
        assert result.ok, result.reason
        print(f"baseline verify_log: {baseline:.1f} s")
        print(f"kernel before the builds: {_kernel_caches()}")
        print(f"creating a 3 KB file before the builds: {_create_probe(work / 'probe-1')}")
        out, cache = work / "out", work / "cache"
        now = parse_now(NOW)

        def build(folder: Path = out, kept: Path = cache) -> Any:
            return build_site(log_dir, signer.verifier, folder, now=now, cache=kept)

        _timed("full build (empty folder, empty cache)", build, baseline)
        _timed("unchanged rebuild", build, baseline)
        if kept_logs is not None:
            _grow(kept_logs[1], log_dir)
        else:
            log.write(args.entries + args.new)
        print(f"appended {args.new:,} entries (now {args.entries + args.new:,})")
        _timed("incremental build (the grown log, cache kept)", build, baseline)
        _timed("unchanged rebuild", build, baseline)
        # The incremental build replaced its changed files (a new inode each, the old one
        # freed): the next files are created past those freed inodes.
        print(f"creating a 3 KB file after it: {_create_probe(work / 'probe-2')}")
        # New folders, not the old ones deleted: deleting 358,000 files just before a build
        # slows the file system's inode allocation for minutes (ext4 skips recently freed
        # inodes), which would be measured as the build's time. All go at the end.
        _timed(
            "full build of the grown log (empty folder, cache kept)",
            lambda: build(work / "out-2"),
            baseline,
        )
        _timed(
            "full build of the grown log (empty folder, empty cache)",
            lambda: build(work / "out-3", work / "cache-3"),
            baseline,
        )
        print(f"kernel after the builds: {_kernel_caches()}")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"peak memory: {peak:.0f} MiB (RSS of this process; of a worker: {child:.0f} MiB)")
        print(
            "targets (20,000 servers): full build <= 45 s; +1,000 entries <= 10 s writing "
            "<= 10,000 files; unchanged rebuild <= 3 s writing nothing; peak <= 800 MiB"
        )
    finally:
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
