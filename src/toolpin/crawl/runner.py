"""The crawl: discover, drop opted-out servers, probe through a bounded pool, append one
batch of change records under one signed checkpoint, update crawl state.

* One crawl of a log at a time: a cross-process lock beside the log directory
  (``<parent>/.<log name>.crawl.lock``) serialises crawls (a second one waits up to
  ``lock_timeout`` seconds, then refuses).
* A probe failure is recorded (with a fixed-text reason) in crawl state and never makes a
  log entry; no failure of one server stops the crawl.
* An entry is appended only for a server that is new or whose surface hash changed.
* All new entries of a run go into one :meth:`~toolpin.publog.tiles.TileLog.append`
  (one signed checkpoint). Blobs are written first; the state is committed after the
  append, and a crash in between is repaired at the next run from the log itself
  (:func:`toolpin.crawl.state.reconcile`).
* Progress goes through a callback (:class:`CrawlEvent`), called from the calling thread.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from toolpin.crawl.candidates import Candidate, Source
from toolpin.crawl.limits import check_limits
from toolpin.crawl.optout import apply_optout, load_optout
from toolpin.crawl.record import Observation, definitions_blob, observation_record
from toolpin.crawl.sandbox import sandbox_env
from toolpin.crawl.sources import Discovery, SourceReport, discover
from toolpin.crawl.state import CrawlState, reconcile
from toolpin.errors import InputError, LogError, StoreError, ToolpinError
from toolpin.probe.ssrf import AddressPolicy
from toolpin.publog.note import Signer
from toolpin.util.clock import utc_now

DEFAULT_CONCURRENCY: Final = 4
DEFAULT_TIMEOUT: Final = 30.0
DEFAULT_LOCK_TIMEOUT: Final = 600.0
STATE_FILE: Final = "crawl-state.sqlite"

Status = Literal["new", "changed", "unchanged", "failed", "skipped"]


def default_state_path(log_dir: Path) -> Path:
    """``<log>/../crawl-state.sqlite``."""
    return log_dir.resolve().parent / STATE_FILE


def crawl_lock_path(log_dir: Path) -> Path:
    resolved = log_dir.resolve()
    return resolved.parent / f".{resolved.name}.crawl.lock"


@dataclass(frozen=True)
class CrawlOptions:
    """Everything one crawl needs (the CLI builds it from its flags)."""

    log_dir: Path
    signer: Signer
    sources: tuple[Source, ...] = ("config",)
    servers_config: Path | None = None
    limit: int | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    allow_exec: bool = False
    policy: AddressPolicy = field(default_factory=AddressPolicy)
    timeout: float = DEFAULT_TIMEOUT
    install_timeout: float = 300.0
    state_path: Path | None = None
    full: bool = False
    """Ignore the registry's ``updated_since`` mark and list everything."""
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    optout_dirs: tuple[Path, ...] | None = None
    """Where ``OPTOUT.txt`` is read (default: the log directory and the working directory)."""
    environ: Mapping[str, str] | None = None


@dataclass(frozen=True)
class CrawlEvent:
    """A progress report: ``kind`` is ``source`` (a discovery source finished),
    ``start`` (probing begins; ``total`` known), ``done`` (one server finished, ``status``
    says how) or ``append`` (the batch is being signed)."""

    kind: Literal["source", "start", "done", "append"]
    done: int = 0
    total: int = 0
    server_id: str | None = None
    name: str | None = None
    status: str | None = None
    detail: str | None = None


@dataclass(frozen=True)
class ServerResult:
    """What happened to one candidate."""

    candidate: Candidate
    status: Status
    reason: str | None = None
    entry: int | None = None
    seconds: float = 0.0
    observation: Observation | None = field(default=None, repr=False)


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
            "probed": self.count("new", "changed", "unchanged", "failed"),
            "ok": self.count("new", "changed", "unchanged"),
            "failed": self.count("failed"),
            "skipped": self.count("skipped"),
            "new": self.count("new"),
            "changed": self.count("changed"),
            "unchanged": self.count("unchanged"),
            "appended": self.appended,
            "log_size": self.log_size,
            "sources": {
                r.source: {"candidates": r.candidates, "error": r.error} for r in self.sources
            },
        }


# ------------------------------------------------------------------------------ probing


@dataclass(frozen=True)
class _Outcome:
    candidate: Candidate
    observation: Observation | None
    reason: str | None
    skipped: bool
    seconds: float


def _probe_candidate(candidate: Candidate, opts: CrawlOptions, scratch_root: Path) -> _Outcome:
    started = time.monotonic()

    def done(obs: Observation | None, reason: str | None, skipped: bool = False) -> _Outcome:
        return _Outcome(candidate, obs, reason, skipped, time.monotonic() - started)

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
        return done(_probe_stdio_candidate(candidate, opts, scratch_root), None)
    except ToolpinError as exc:
        return done(None, exc.message)
    except Exception as exc:  # one server never stops the crawl
        return done(None, f"internal error while probing ({type(exc).__name__})")


def _probe_stdio_candidate(
    candidate: Candidate, opts: CrawlOptions, scratch_root: Path
) -> Observation:
    from toolpin.crawl.stdio import probe_sandboxed

    scratch = Path(tempfile.mkdtemp(prefix="probe-", dir=scratch_root))
    try:
        home = scratch / "home"
        home.mkdir(mode=0o700)
        package = None
        if candidate.argv:
            argv: Sequence[str] = candidate.argv
            env = sandbox_env(home, extra=candidate.env)
            cwd = candidate.cwd
        else:
            from toolpin.crawl.install import install

            assert candidate.package is not None
            installed = install(
                candidate.package,
                scratch,
                env=sandbox_env(home),
                timeout=opts.install_timeout,
                environ=opts.environ,
            )
            argv, package = installed.argv, installed.package
            env = sandbox_env(home, extra=installed.env)
            cwd = str(scratch)
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


def probe_all(
    candidates: Sequence[Candidate],
    opts: CrawlOptions,
    progress: Callable[[CrawlEvent], None] | None = None,
) -> list[_Outcome]:
    """Probe every candidate through a pool of ``opts.concurrency`` workers; outcomes come
    back in candidate order. ``progress`` is called from this thread."""
    outcomes: dict[int, _Outcome] = {}
    total = len(candidates)
    with tempfile.TemporaryDirectory(prefix="toolpin-crawl-") as scratch_dir:
        scratch_root = Path(scratch_dir)
        with ThreadPoolExecutor(max_workers=max(1, opts.concurrency)) as pool:
            futures: dict[Future[_Outcome], int] = {
                pool.submit(_probe_candidate, c, opts, scratch_root): i
                for i, c in enumerate(candidates)
            }
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    outcome = future.result()
                    outcomes[futures[future]] = outcome
                    if progress is not None:
                        status = (
                            "skipped"
                            if outcome.skipped
                            else "failed"
                            if outcome.observation is None
                            else "ok"
                        )
                        progress(
                            CrawlEvent(
                                "done",
                                len(outcomes),
                                total,
                                outcome.candidate.id,
                                outcome.candidate.name,
                                status,
                                outcome.reason,
                            )
                        )
    return [outcomes[i] for i in range(total)]


# -------------------------------------------------------------------------------- crawl


def _select(
    opts: CrawlOptions, state: CrawlState, progress: Callable[[CrawlEvent], None] | None
) -> tuple[Discovery, list[Candidate], list[Candidate], int]:
    """``(discovery, to probe, opted out, all candidates found)``."""
    since = None if opts.full else state.get_meta("registry_updated_since")

    def on_source(report: SourceReport) -> None:
        if progress is not None:
            progress(CrawlEvent("source", detail=report.source, total=report.candidates))

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
    if opts.limit is not None:
        kept = kept[: opts.limit]
    return found, kept, dropped, len(candidates)


def crawl(opts: CrawlOptions, progress: Callable[[CrawlEvent], None] | None = None) -> CrawlSummary:
    """Run one crawl of ``opts.log_dir`` (see the module doc)."""
    from toolpin.util.fs import locked

    started = time.monotonic()
    ran_at = utc_now()
    log_dir = opts.log_dir
    if log_dir.exists() and not log_dir.is_dir():
        raise InputError(f"{log_dir} is not a directory")
    if not log_dir.resolve().parent.is_dir():
        raise InputError(f"the parent directory of {log_dir} does not exist")
    state_path = opts.state_path or default_state_path(log_dir)
    if state_path.resolve().is_relative_to(log_dir.resolve()):
        raise InputError(
            "the crawl state must not live inside the log directory (it would be published)"
        )
    try:
        with locked(crawl_lock_path(log_dir), timeout=opts.lock_timeout):
            return _crawl_locked(opts, state_path, started, ran_at, progress)
    except StoreError as exc:
        if "waiting for the lock" in exc.message:
            raise LogError(
                f"another crawl of {log_dir} is still running",
                advice="Wait for it to finish (crawls of one log are serialised).",
            ) from None
        raise


def _crawl_locked(
    opts: CrawlOptions,
    state_path: Path,
    started: float,
    ran_at: str,
    progress: Callable[[CrawlEvent], None] | None,
) -> CrawlSummary:
    from toolpin.publog.blobs import BlobStore
    from toolpin.publog.entries import encode_entry
    from toolpin.publog.tiles import TileLog

    log = TileLog.open(opts.log_dir, opts.signer.verifier)
    with CrawlState.open(state_path) as state:
        with state.transaction():
            state.bind_origin(opts.signer.name)
        replayed = reconcile(state, log)
        found, candidates, dropped, total = _select(opts, state, progress)
        if progress is not None:
            progress(CrawlEvent("start", 0, len(candidates)))
        outcomes = probe_all(candidates, opts, progress)

        blobs = BlobStore(opts.log_dir)
        entries: list[bytes] = []
        results: list[ServerResult] = []
        for outcome in outcomes:
            cand, obs = outcome.candidate, outcome.observation
            if obs is None:
                status: Status = "skipped" if outcome.skipped else "failed"
                results.append(ServerResult(cand, status, outcome.reason, None, outcome.seconds))
                continue
            previous = state.get(cand.id)
            if previous is not None and previous.surface_hash == obs.surface_hash:
                results.append(ServerResult(cand, "unchanged", None, None, outcome.seconds, obs))
                continue
            ref = blobs.put(definitions_blob(obs.snapshot))
            record = observation_record(
                cand,
                obs,
                previous=previous.last_entry if previous else None,
                blob=ref,
                # The change happened after the last good look that saw the old surface.
                last_good_look=previous.last_ok if previous and previous.surface_hash else None,
            )
            entries.append(encode_entry(record))
            status = "new" if previous is None or previous.surface_hash is None else "changed"
            results.append(ServerResult(cand, status, None, len(entries) - 1, outcome.seconds, obs))

        size = log.size
        if entries or log.checkpoint is None:
            if progress is not None:
                progress(CrawlEvent("append", len(entries), len(entries)))
            size = log.append(entries, opts.signer).size
        first = size - len(entries)
        results = [
            r
            if r.entry is None
            else ServerResult(
                r.candidate, r.status, r.reason, first + r.entry, r.seconds, r.observation
            )
            for r in results
        ]
        summary = CrawlSummary(
            ran_at=ran_at,
            duration_s=time.monotonic() - started,
            candidates=total,
            opted_out=len(dropped),
            results=tuple(results),
            log_size=size,
            appended=len(entries),
            sources=tuple(found.reports),
            replayed=replayed,
        )
        _commit(state, summary, found, dropped, ran_at)
    return summary


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
            when = obs.observed_at if obs is not None else ran_at
            state.seen(cand, when)
            tools = obs.snapshot.counts().get("tools") if obs is not None else None
            if result.status == "failed":
                state.record_failure(cand.id, when, result.reason or "failed")
            elif result.status == "skipped":
                state.record_skip(cand.id, f"not probed: {result.reason}")
            elif result.status == "unchanged":
                state.record_look(cand.id, when, tools)
            else:
                assert obs is not None and result.entry is not None
                state.record_change(cand.id, when, obs.surface_hash, result.entry, tools)
        state.set_status(found.deleted, "deleted")
        state.set_status((c.id for c in dropped), "opted-out")
        registry = next((r for r in found.reports if r.source == "registry"), None)
        if registry is not None and registry.error is None and found.registry_high_water:
            state.set_meta("registry_updated_since", found.registry_high_water)
        state.set_meta("log_size", str(summary.log_size))
        state.add_run(ran_at, summary.to_json())


__all__ = [
    "CrawlEvent",
    "CrawlOptions",
    "CrawlSummary",
    "ServerResult",
    "crawl",
    "default_state_path",
    "probe_all",
]
