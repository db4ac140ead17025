"""The crawl: discover, drop opted-out servers, probe through a bounded pool, append one
batch of change records under one signed checkpoint, update crawl state.

* One crawl of a log at a time: a cross-process lock beside the log directory
  (``<parent>/.<log name>.crawl.lock``) serialises crawls (a second one waits up to
  ``lock_timeout`` seconds, then refuses).
* A probe failure is recorded (a fixed-text reason, plus a short sanitised hint of the
  server's or installer's stderr) in crawl state and never makes a log entry; no failure
  of one server stops the crawl.
* An entry is appended only for a server that is new, whose surface hash changed, or
  whose surface is unchanged but now served by another release (``change: package``; see
  :mod:`toolpin.crawl.record`).
* Probes run ``concurrency`` at a time, installs included; package downloads go through
  the shared caches (:mod:`toolpin.crawl.caches`) with the user's package set-up
  (:mod:`toolpin.crawl.hostconfig`). An install (a package candidate, or the install-only
  form of a config's ``npx`` / ``uvx`` entry, :mod:`toolpin.crawl.identity`) has
  ``install_timeout`` seconds; ``timeout`` counts from the server's start.
* All new entries of a run go into one :meth:`~toolpin.publog.tiles.TileLog.append`
  (one signed checkpoint). Blobs are written first; the state is committed after the
  append, and a crash in between is repaired at the next run from the log itself
  (:func:`toolpin.crawl.state.reconcile`).
* Progress goes through a callback (:class:`CrawlEvent`), called from the calling thread:
  ``probe`` names each server as its probe starts, ``done`` as it finishes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple

from toolpin.core.render import counted
from toolpin.crawl.caches import SharedCaches
from toolpin.crawl.candidates import Candidate, PackageCoords, Source
from toolpin.crawl.hint import hint_of
from toolpin.crawl.hostconfig import HostSetup, host_setup
from toolpin.crawl.install import DEFAULT_INSTALL_TIMEOUT
from toolpin.crawl.limits import check_limits
from toolpin.crawl.observations import Outcome, Shard
from toolpin.crawl.optout import apply_optout, load_optout
from toolpin.crawl.record import Change, Observation, definitions_blob, observation_record
from toolpin.crawl.sandbox import sandbox_env
from toolpin.crawl.sources import Discovery, SourceReport, discover
from toolpin.crawl.state import CrawlState, reconcile
from toolpin.errors import InputError, LogError, StoreError, ToolpinError
from toolpin.probe.ssrf import AddressPolicy
from toolpin.publog.note import Signer
from toolpin.util.clock import utc_now

if TYPE_CHECKING:
    from toolpin.publog.tiles import TileLog

DEFAULT_CONCURRENCY: Final = 4
DEFAULT_TIMEOUT: Final = 30.0
DEFAULT_LOCK_TIMEOUT: Final = 600.0
_NPM_RUNNERS: Final = frozenset({"npx", "npm", "pnpm", "yarn", "bunx", "bun"})
STATE_SUFFIX: Final = ".crawl-state.sqlite"
LEGACY_STATE_FILE: Final = "crawl-state.sqlite"

Status = Literal["new", "changed", "package-changed", "unchanged", "observed", "failed", "skipped"]
"""``observed``: a shard's good look, handed to the sequencer (``log append --from``)."""


def default_state_path(log_dir: Path) -> Path:
    """``<parent>/<log name>.crawl-state.sqlite``: named after the log directory, so two
    logs in one folder each have their own state."""
    resolved = log_dir.resolve()
    return resolved.parent / f"{resolved.name}{STATE_SUFFIX}"


def state_path_for(log_dir: Path, origin: str) -> Path:
    """The default state file of ``log_dir``; a state written by an earlier version
    (``crawl-state.sqlite`` next to the log) is kept when it belongs to this log's
    ``origin`` and the named file does not exist yet."""
    named = default_state_path(log_dir)
    legacy = named.parent / LEGACY_STATE_FILE
    if named.exists() or not legacy.is_file():
        return named
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(f"{legacy.as_uri()}?mode=ro", uri=True)) as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'origin'").fetchone()
    except sqlite3.Error:
        return named
    return legacy if row is not None and row[0] == origin else named


def existing_state_path(log_dir: Path, origin: str) -> Path | None:
    """The state file ``log crawl`` keeps for ``log_dir`` by default
    (:func:`state_path_for`), or None when there is none yet (``log site``'s default)."""
    path = state_path_for(log_dir, origin)
    return path if path.is_file() else None


def crawl_lock_path(log_dir: Path) -> Path:
    resolved = log_dir.resolve()
    return resolved.parent / f".{resolved.name}.crawl.lock"


def writer_state_path(log_dir: Path, origin: str, state_path: Path | None) -> Path:
    """The state file of a crawl or append that writes ``log_dir`` (``state_path``, or
    :func:`state_path_for`); refuses a log path that is not a directory, one whose parent
    does not exist, and a state file inside the log (it would be published)."""
    if log_dir.exists() and not log_dir.is_dir():
        raise InputError(f"{log_dir} is not a directory")
    if not log_dir.resolve().parent.is_dir():
        raise InputError(f"the parent directory of {log_dir} does not exist")
    path = state_path or state_path_for(log_dir, origin)
    if path.resolve().is_relative_to(log_dir.resolve()):
        raise InputError(
            "the crawl state must not live inside the log directory (it would be published)"
        )
    return path


@contextlib.contextmanager
def writer_lock(log_dir: Path, timeout: float, *, busy: str, advice: str) -> Iterator[None]:
    """Hold the one-writer lock of ``log_dir`` (:func:`crawl_lock_path`) around the block;
    a lock still held by another writer after ``timeout`` seconds is ``LogError(busy)``."""
    from toolpin.util.fs import locked

    try:
        with locked(crawl_lock_path(log_dir), timeout=timeout):
            yield
    except StoreError as exc:
        if "waiting for the lock" in exc.message:
            raise LogError(busy, advice=advice) from None
        raise


@dataclass(frozen=True)
class CrawlOptions:
    """Everything one crawl needs (the CLI builds it from its flags)."""

    log_dir: Path
    signer: Signer | None
    """The log's signing key (``None`` only for a shard's
    :func:`~toolpin.crawl.sequence.observe`)."""
    sources: tuple[Source, ...] = ("config",)
    servers_config: Path | None = None
    limit: int | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    allow_exec: bool = False
    policy: AddressPolicy = field(default_factory=AddressPolicy)
    timeout: float = DEFAULT_TIMEOUT
    """Seconds for one probe conversation, counted from the server's start."""
    install_timeout: float = DEFAULT_INSTALL_TIMEOUT
    """Seconds for one install (a package candidate, or a config entry's install-only run)."""
    state_path: Path | None = None
    full: bool = False
    """Ignore the registry's ``updated_since`` mark and list everything."""
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    optout_dirs: tuple[Path, ...] | None = None
    """Where ``OPTOUT.txt`` is read (default: the log directory and the working directory)."""
    environ: Mapping[str, str] | None = None
    cache_dir: Path | None = None
    """The shared package caches (default ``toolpin_cache()/crawl``)."""
    identify_packages: bool = True
    """Resolve and pin the package a config entry runs (:mod:`toolpin.crawl.identity`)."""
    shard: Shard | None = None
    """Probe only this shard's candidates (:meth:`~toolpin.crawl.observations.Shard.owns`)."""
    after_append: Callable[[], None] | None = None
    """Run after the batch is signed and before crawl state is committed (a bucket's log
    is published there, so state never runs ahead of the published log)."""


@dataclass(frozen=True)
class CrawlEvent:
    """A progress report: ``kind`` is ``source`` (a discovery source finished),
    ``start`` (probing begins; ``total`` known), ``probe`` (a server's probe starts),
    ``done`` (one server finished, ``status`` says how) or ``append`` (the batch is being
    signed)."""

    kind: Literal["source", "start", "probe", "done", "append"]
    done: int = 0
    total: int = 0
    server_id: str | None = None
    name: str | None = None
    status: str | None = None
    detail: str | None = None
    seconds: float | None = None


@dataclass(frozen=True)
class ServerResult:
    """What happened to one candidate."""

    candidate: Candidate
    status: Status
    reason: str | None = None
    entry: int | None = None
    seconds: float = 0.0
    observation: Observation | None = field(default=None, repr=False)
    hint: str | None = None
    """The server's or installer's stderr tail (sanitised) when it failed."""
    probed_at: str | None = None
    package: PackageCoords | None = None
    note: str | None = None
    """Why a config entry's package version is not recorded (fixed text), when it is not."""

    def to_json(self) -> dict[str, Any]:
        obs = self.observation
        tools = obs.snapshot.counts().get("tools") if obs is not None else None
        return {
            "id": self.candidate.id,
            "name": self.candidate.name,
            "source": self.candidate.source,
            "status": self.status,
            "reason": self.reason,
            "hint": self.hint,
            "seconds": round(self.seconds, 1),
            "tools": tools,
            "package": self.package.to_json() if self.package is not None else None,
            "note": self.note,
            "entry": self.entry,
            "probed_at": self.probed_at,
        }


@dataclass(frozen=True)
class CrawlSummary:
    """The run summary (``to_json`` is what the CLI prints)."""

    ran_at: str
    duration_s: float
    candidates: int
    """Every candidate found, before opt-out and ``--limit``."""
    opted_out: int
    results: tuple[ServerResult, ...]
    log_size: int
    appended: int
    sources: tuple[SourceReport, ...]
    replayed: int = 0

    def count(self, *statuses: Status) -> int:
        return sum(1 for r in self.results if r.status in statuses)

    def to_json(self) -> dict[str, Any]:
        return {
            "ran_at": self.ran_at,
            "duration_s": round(self.duration_s, 3),
            "candidates": self.candidates,
            "opted_out": self.opted_out,
            "probed": self.count(
                "new", "changed", "package-changed", "unchanged", "observed", "failed"
            ),
            "ok": self.count("new", "changed", "package-changed", "unchanged", "observed"),
            "failed": self.count("failed"),
            "skipped": self.count("skipped"),
            "new": self.count("new"),
            "changed": self.count("changed"),
            "package_changed": self.count("package-changed"),
            "unchanged": self.count("unchanged"),
            "appended": self.appended,
            "log_size": self.log_size,
            "sources": {
                r.source: {"candidates": r.candidates, "error": r.error} for r in self.sources
            },
            "servers": [r.to_json() for r in self.results],
        }

    def summary_line(self) -> str:
        """One line: what the run did (the last line the CLI prints)."""
        parts = [f"{self.count('new')} new", f"{self.count('changed')} changed"]
        if self.count("package-changed"):
            parts.append(f"{self.count('package-changed')} package changed")
        if self.count("observed"):
            parts.insert(0, f"{self.count('observed')} observed")
        parts += [
            f"{self.count('unchanged')} unchanged",
            f"{self.count('failed')} failed",
            f"{self.count('skipped')} skipped",
        ]
        if self.opted_out:
            parts.append(f"{self.opted_out} opted out")
        return (
            f"crawled {len(self.results)} of {counted(self.candidates, 'server')} in "
            f"{self.duration_s:.1f}s: {', '.join(parts)}; appended {self.appended}, "
            f"log size {self.log_size}"
        )


# ------------------------------------------------------------------------------ probing


_Outcome = Outcome


@dataclass(frozen=True)
class _Context:
    scratch_root: Path
    caches: SharedCaches
    setup: HostSetup
    environ: Mapping[str, str]


@dataclass
class _Found:
    """What a stdio probe learnt beyond the observation (filled as it goes)."""

    package: PackageCoords | None = None
    note: str | None = None


def _probe_candidate(candidate: Candidate, opts: CrawlOptions, ctx: _Context) -> _Outcome:
    started = time.monotonic()
    probed_at = utc_now()
    found = _Found()

    def done(
        obs: Observation | None,
        reason: str | None,
        skipped: bool = False,
        hint: str | None = None,
    ) -> _Outcome:
        return _Outcome(
            candidate,
            obs,
            reason,
            skipped,
            time.monotonic() - started,
            None if skipped else probed_at,
            hint,
            obs.package if obs is not None and obs.package is not None else found.package,
            found.note,
        )

    if candidate.skip_reason is not None or candidate.transport == "unknown":
        return done(None, candidate.skip_reason or "no way to reach it is known", True)
    if candidate.transport == "stdio" and not candidate.argv and not opts.allow_exec:
        return done(None, "installing a package needs --allow-exec", True)
    try:
        if candidate.transport == "streamable-http":
            from toolpin.probe.http import probe_http

            assert candidate.url is not None
            result = probe_http(candidate.url, policy=opts.policy, timeout=opts.timeout)
            check_limits(result.snapshot)
            return done(
                Observation(result.snapshot, result.era, result.protocol_version, utc_now()), None
            )
        return done(_probe_stdio_candidate(candidate, opts, ctx, found), None)
    except ToolpinError as exc:
        return done(None, exc.message, hint=hint_of(exc))
    except Exception as exc:  # one server never stops the crawl
        return done(None, f"internal error while probing ({type(exc).__name__})")


_Start = tuple[Sequence[str], dict[str, str], str | None, PackageCoords | None]
"""How to start a server: argv, environment, working directory, and its package."""


class _StdioJob(NamedTuple):
    """One stdio probe's candidate and settings, what it learns as it goes, and its own
    folders: ``home`` (the server's HOME) inside ``scratch`` (removed after the probe)."""

    candidate: Candidate
    opts: CrawlOptions
    ctx: _Context
    found: _Found
    home: Path
    scratch: Path


def _start_config_server(job: _StdioJob) -> _Start:
    """A local config's server: its package resolved and pinned, installed first."""
    candidate, opts, ctx, found, home, scratch = job
    argv: Sequence[str] = candidate.argv
    prefetch = None
    package = None
    if opts.identify_packages:
        from toolpin.crawl.identity import identify

        identity = identify(
            candidate.argv,
            where=Path(candidate.cwd) if candidate.cwd else None,
            env={**ctx.environ, **candidate.env},
        )
        if identity is not None:
            argv, prefetch, package = identity.argv, identity.prefetch, identity.coords
            found.package, found.note = identity.coords, identity.note
    from toolpin.packages import runner_name

    npm = runner_name(argv[0]) in _NPM_RUNNERS
    env = sandbox_env(
        home,
        extra={
            **ctx.setup.sandbox_variables(trusted=True, npm=npm),
            **ctx.caches.probe_env(scratch, trusted=True),
            **candidate.env,
        },
    )
    if prefetch is not None:
        from toolpin.crawl.install import run_install_step

        with ctx.caches.lock_for(" ".join(prefetch)):
            run_install_step(
                prefetch,
                env=env,
                cwd=Path(candidate.cwd) if candidate.cwd else scratch,
                timeout=opts.install_timeout,
                what="installing the package",
            )
    return argv, env, candidate.cwd, package


def _start_listed_package(job: _StdioJob) -> _Start:
    """A package from a public listing: installed in ``scratch``, started without caches."""
    candidate, opts, ctx, found, home, scratch = job
    from toolpin.crawl.install import install

    assert candidate.package is not None
    installer_env = sandbox_env(
        home,
        extra={
            **ctx.setup.sandbox_variables(trusted=True),
            **ctx.caches.probe_env(scratch, trusted=False),
        },
    )
    installed = install(
        candidate.package,
        scratch,
        env=installer_env,
        timeout=opts.install_timeout,
        environ=opts.environ,
        setup=ctx.setup,
        caches=ctx.caches,
    )
    found.package = installed.package
    env = sandbox_env(home, extra={**ctx.setup.sandbox_variables(trusted=False), **installed.env})
    return installed.argv, env, str(scratch), installed.package


def _probe_stdio_candidate(
    candidate: Candidate, opts: CrawlOptions, ctx: _Context, found: _Found
) -> Observation:
    from toolpin.crawl.stdio import probe_sandboxed

    scratch = Path(tempfile.mkdtemp(prefix="probe-", dir=ctx.scratch_root))
    try:
        home = scratch / "home"
        home.mkdir(mode=0o700)
        start = _start_config_server if candidate.argv else _start_listed_package
        argv, env, cwd, package = start(_StdioJob(candidate, opts, ctx, found, home, scratch))
        outcome = probe_sandboxed(argv, env=env, cwd=cwd, timeout=opts.timeout)
        check_limits(outcome.result.snapshot)
        return Observation(
            snapshot=outcome.result.snapshot,
            era=outcome.result.era,
            protocol_version=outcome.result.protocol_version,
            observed_at=utc_now(),
            supplied_env=outcome.env_names,
            placeholders=outcome.placeholders,
            package=package,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _status_word(outcome: _Outcome) -> str:
    if outcome.skipped:
        return "skipped"
    return "failed" if outcome.observation is None else "ok"


def probe_all(
    candidates: Sequence[Candidate],
    opts: CrawlOptions,
    progress: Callable[[CrawlEvent], None] | None = None,
) -> list[_Outcome]:
    """Probe every candidate, ``opts.concurrency`` at a time; outcomes come back in
    candidate order. ``progress`` is called from this thread: ``probe`` as each probe
    starts, ``done`` as it ends."""
    outcomes: dict[int, _Outcome] = {}
    total = len(candidates)
    width = max(1, opts.concurrency)
    environ = os.environ if opts.environ is None else opts.environ
    setup = host_setup(environ)
    caches = SharedCaches.at(opts.cache_dir)
    with tempfile.TemporaryDirectory(prefix="toolpin-crawl-") as scratch_dir:
        ctx = _Context(Path(scratch_dir), caches, setup, environ)
        with ThreadPoolExecutor(max_workers=width) as pool:
            queue = list(enumerate(candidates))
            queue.reverse()
            running: dict[Future[_Outcome], int] = {}
            started = 0
            while queue or running:
                while queue and len(running) < width:
                    index, candidate = queue.pop()
                    started += 1
                    if progress is not None:
                        progress(CrawlEvent("probe", started, total, candidate.id, candidate.name))
                    running[pool.submit(_probe_candidate, candidate, opts, ctx)] = index
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    outcome = future.result()
                    outcomes[running.pop(future)] = outcome
                    if progress is not None:
                        progress(
                            CrawlEvent(
                                "done",
                                len(outcomes),
                                total,
                                outcome.candidate.id,
                                outcome.candidate.name,
                                _status_word(outcome),
                                outcome.reason,
                                outcome.seconds,
                            )
                        )
    return [outcomes[i] for i in range(total)]


def _result(outcome: _Outcome, status: Status, entry: int | None = None) -> ServerResult:
    return ServerResult(
        outcome.candidate,
        status,
        outcome.reason if outcome.observation is None else None,
        entry,
        outcome.seconds,
        outcome.observation,
        outcome.hint,
        outcome.probed_at,
        outcome.package,
        outcome.note,
    )


def _package_changed(old: PackageCoords | None, new: PackageCoords | None) -> bool:
    """A release change worth an entry: the new release is known exactly and differs."""
    if new is None or new.version is None:
        return False
    if old is None:
        return True
    return (old.ecosystem, old.name, old.identity()) != (new.ecosystem, new.name, new.identity())


# -------------------------------------------------------------------------------- crawl


@dataclass(frozen=True)
class _Selection:
    """What a crawl (or one shard's part of it) probes: the discovery, the candidates to
    probe, the opted-out ones, and how many were found in all."""

    found: Discovery
    candidates: list[Candidate]
    dropped: list[Candidate]
    total: int

    def probe(
        self, opts: CrawlOptions, progress: Callable[[CrawlEvent], None] | None
    ) -> list[_Outcome]:
        """Probe the candidates (after a ``start`` event), as :func:`probe_all`."""
        if progress is not None:
            progress(CrawlEvent("start", 0, len(self.candidates)))
        return probe_all(self.candidates, opts, progress)

    def summary(
        self,
        ran_at: str,
        started: float,
        results: Sequence[ServerResult],
        *,
        log_size: int = 0,
        appended: int = 0,
        replayed: int = 0,
    ) -> CrawlSummary:
        """The run's summary (``started``: its ``time.monotonic()`` at the start)."""
        return CrawlSummary(
            ran_at=ran_at,
            duration_s=time.monotonic() - started,
            candidates=self.total,
            opted_out=len(self.dropped),
            results=tuple(results),
            log_size=log_size,
            appended=appended,
            sources=tuple(self.found.reports),
            replayed=replayed,
        )


def _select(
    opts: CrawlOptions, state: CrawlState, progress: Callable[[CrawlEvent], None] | None
) -> _Selection:
    """What this crawl probes (see :class:`_Selection`)."""
    since = None if opts.full else state.get_meta("registry_updated_since")

    def on_source(report: SourceReport) -> None:
        if progress is not None:
            progress(
                CrawlEvent(
                    "source", detail=report.source, total=report.candidates, status=report.error
                )
            )

    found = discover(
        opts.sources,
        config=opts.servers_config,
        limit=opts.limit,
        registry_since=since,
        environ=opts.environ,
        timeout=max(opts.timeout, 10.0),
        on_source=on_source,
    )
    candidates = list(found.candidates)
    if "registry" in opts.sources:
        ids = {c.id for c in candidates}
        gone = set(found.deleted)
        candidates += [
            c for c in state.known_candidates("registry") if c.id not in ids and c.id not in gone
        ]
    directories = opts.optout_dirs if opts.optout_dirs is not None else (opts.log_dir, Path.cwd())
    kept, dropped = apply_optout(candidates, load_optout(directories))
    if opts.shard is not None:
        kept = [c for c in kept if opts.shard.owns(c.id)]
    if opts.limit is not None:
        kept = kept[: opts.limit]
    return _Selection(found, kept, dropped, len(candidates))


def _signer_of(opts: CrawlOptions) -> Signer:
    if opts.signer is None:
        raise InputError("a crawl that writes the log needs its signing key")
    return opts.signer


def crawl(opts: CrawlOptions, progress: Callable[[CrawlEvent], None] | None = None) -> CrawlSummary:
    """Run one crawl of ``opts.log_dir`` (see the module doc)."""
    started = time.monotonic()
    ran_at = utc_now()
    log_dir = opts.log_dir
    signer = _signer_of(opts)
    state_path = writer_state_path(log_dir, signer.name, opts.state_path)
    with writer_lock(
        log_dir,
        opts.lock_timeout,
        busy=f"another crawl of {log_dir} is still running",
        advice="Wait for it to finish (crawls of one log are serialised).",
    ):
        return _crawl_locked(opts, state_path, started, ran_at, progress)


def _crawl_locked(
    opts: CrawlOptions,
    state_path: Path,
    started: float,
    ran_at: str,
    progress: Callable[[CrawlEvent], None] | None,
) -> CrawlSummary:
    from toolpin.publog.tiles import TileLog

    signer = _signer_of(opts)
    log = TileLog.open(opts.log_dir, signer.verifier)
    with CrawlState.open(state_path) as state:
        with state.transaction():
            state.bind_origin(signer.name)
        replayed = reconcile(state, log)
        selected = _select(opts, state, progress)
        outcomes = selected.probe(opts, progress)
        results, size, appended = log_outcomes(log, state, outcomes, opts, progress)
        summary = selected.summary(
            ran_at, started, results, log_size=size, appended=appended, replayed=replayed
        )
        _commit(state, summary, selected.found, selected.dropped, ran_at)
    return summary


def log_outcomes(
    log: TileLog,
    state: CrawlState,
    outcomes: Sequence[Outcome],
    opts: CrawlOptions,
    progress: Callable[[CrawlEvent], None] | None = None,
) -> tuple[list[ServerResult], int, int]:
    """Append an entry for every outcome that is new or changed against ``state``, in
    one signed batch (blobs first), then run ``opts.after_append``; returns the results
    (with their entry indexes), the log size and how many entries were appended."""
    from toolpin.publog.blobs import BlobStore
    from toolpin.publog.entries import encode_entry

    blobs = BlobStore(log.path)
    entries: list[bytes] = []
    results: list[ServerResult] = []
    for outcome in outcomes:
        cand, obs = outcome.candidate, outcome.observation
        if obs is None:
            status: Status = "skipped" if outcome.skipped else "failed"
            results.append(_result(outcome, status))
            continue
        previous = state.get(cand.id)
        change: Change
        if previous is not None and previous.surface_hash == obs.surface_hash:
            if not _package_changed(previous.package, obs.package):
                results.append(_result(outcome, "unchanged"))
                continue
            status, change = "package-changed", "package"
        elif previous is None or previous.surface_hash is None:
            status, change = "new", "new"
        else:
            status, change = "changed", "definitions"
        ref = blobs.put(definitions_blob(obs.snapshot))
        record = observation_record(
            cand,
            obs,
            previous=previous.last_entry if previous else None,
            blob=ref,
            previous_look=previous.last_ok if previous and previous.surface_hash else None,
            change=change,
        )
        entries.append(encode_entry(record))
        results.append(_result(outcome, status, len(entries) - 1))

    size = log.size
    if entries or log.checkpoint is None:
        if progress is not None:
            progress(CrawlEvent("append", len(entries), len(entries)))
        size = log.append(entries, _signer_of(opts)).size
    if opts.after_append is not None:
        opts.after_append()
    first = size - len(entries)
    results = [
        r if r.entry is None else dataclasses.replace(r, entry=first + r.entry) for r in results
    ]
    return results, size, len(entries)


def _commit(
    state: CrawlState,
    summary: CrawlSummary,
    found: Discovery,
    dropped: Sequence[Candidate],
    ran_at: str,
) -> None:
    with state.transaction():
        for result in summary.results:
            cand, obs = result.candidate, result.observation
            when = result.probed_at or ran_at
            state.seen(cand, when)
            tools = obs.snapshot.counts().get("tools") if obs is not None else None
            if result.status == "failed":
                state.record_failure(cand.id, when, result.reason or "failed", result.hint)
            elif result.status == "skipped":
                state.record_skip(cand.id, f"not probed: {result.reason}")
            elif result.status == "unchanged":
                state.record_look(cand.id, when, tools)
            else:
                assert obs is not None and result.entry is not None
                state.record_change(
                    cand.id, when, obs.surface_hash, result.entry, tools, obs.package
                )
        state.set_status(found.deleted, "deleted")
        state.set_status((c.id for c in dropped), "opted-out")
        registry = next((r for r in found.reports if r.source == "registry"), None)
        if registry is not None and registry.error is None and found.registry_high_water:
            state.set_meta("registry_updated_since", found.registry_high_water)
        state.set_meta("log_size", str(summary.log_size))
        run = summary.to_json()
        del run["servers"]  # per server, the servers table holds it; runs stay small
        state.add_run(ran_at, run)


__all__ = [
    "CrawlEvent",
    "CrawlOptions",
    "CrawlSummary",
    "ServerResult",
    "crawl",
    "default_state_path",
    "probe_all",
    "state_path_for",
]
