"""A crawl spread over machines: shards observe, one sequencer appends.

:func:`observe` is one shard's part of a crawl (``log crawl --shard K/N``): the same
discovery, opt-out and probes as :func:`~toolpin.crawl.runner.crawl`, restricted to the
shard's candidates, with no log and no state written: the outcomes are returned for an
observations file (:mod:`toolpin.crawl.observations`).

:func:`append_observations` is the single sequencer (``log append --from``): under the
log's crawl lock it reconciles crawl state with the log, reads every observations file
(strictly; a candidate in two files is refused), drops opted-out servers again (the log's
own ``OPTOUT.txt`` wins over a shard's), and appends, in candidate-id order, what is new or
changed against the state — the same decision and the same one signed batch as a crawl.
The same log, state and observations give the same entries.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from toolpin.crawl.observations import Outcome, decode_observations
from toolpin.crawl.optout import apply_optout, load_optout
from toolpin.crawl.runner import (
    CrawlEvent,
    CrawlOptions,
    CrawlSummary,
    ServerResult,
    Status,
    _commit,
    _result,
    _select,
    log_outcomes,
    writer_lock,
    writer_state_path,
)
from toolpin.crawl.sources import Discovery
from toolpin.crawl.state import CrawlState, reconcile
from toolpin.errors import InputError
from toolpin.publog.note import Signer
from toolpin.util.clock import utc_now

Progress = Callable[[CrawlEvent], None]


def observe(
    opts: CrawlOptions, progress: Progress | None = None
) -> tuple[CrawlSummary, list[Outcome]]:
    """Probe ``opts.shard``'s candidates; nothing is logged (see the module doc)."""
    started = time.monotonic()
    ran_at = utc_now()
    with tempfile.TemporaryDirectory(prefix="toolpin-shard-") as scratch:
        state_path = opts.state_path or Path(scratch) / "state.sqlite"
        with CrawlState.open(state_path) as state:
            selected = _select(opts, state, progress)
    outcomes = selected.probe(opts, progress)
    return selected.summary(ran_at, started, [_observed(o) for o in outcomes]), outcomes


def _observed(outcome: Outcome) -> ServerResult:
    status: Status = "observed"
    if outcome.observation is None:
        status = "skipped" if outcome.skipped else "failed"
    return _result(outcome, status)


def read_batches(batches: Sequence[tuple[str, bytes]]) -> list[Outcome]:
    """Every outcome of ``batches`` (``(name, bytes)``), by candidate id; refuses a
    candidate that two files (or one file twice) name."""
    seen: dict[str, str] = {}
    outcomes: list[Outcome] = []
    for where, data in batches:
        for outcome in decode_observations(data, where):
            cid = outcome.candidate.id
            if cid in seen:
                raise InputError(
                    f"a server is observed twice ({seen[cid]} and {where}); "
                    "each candidate belongs to one shard"
                )
            seen[cid] = where
            outcomes.append(outcome)
    return sorted(outcomes, key=lambda o: o.candidate.id)


def append_observations(
    log_dir: Path,
    signer: Signer,
    batches: Sequence[tuple[str, bytes]],
    *,
    state_path: Path | None = None,
    after_append: Callable[[], None] | None = None,
    lock_timeout: float = 600.0,
    progress: Progress | None = None,
) -> CrawlSummary:
    """Append the observations of ``batches`` to the log at ``log_dir`` (module doc)."""
    from toolpin.publog.tiles import TileLog

    started = time.monotonic()
    ran_at = utc_now()
    outcomes = read_batches(batches)  # all refused before anything is written
    state_file = writer_state_path(log_dir, signer.name, state_path)
    kept, dropped = apply_optout([o.candidate for o in outcomes], load_optout((log_dir,)))
    keep = {c.id for c in kept}
    chosen = [o for o in outcomes if o.candidate.id in keep]
    opts = CrawlOptions(log_dir=log_dir, signer=signer, after_append=after_append)
    with writer_lock(
        log_dir,
        lock_timeout,
        busy=f"a crawl or append of {log_dir} is still running",
        advice="Wait for it to finish (writers of one log are serialised).",
    ):
        log = TileLog.open(log_dir, signer.verifier)
        with CrawlState.open(state_file) as state:
            with state.transaction():
                state.bind_origin(signer.name)
            replayed = reconcile(state, log)
            results, size, appended = log_outcomes(log, state, chosen, opts, progress)
            summary = CrawlSummary(
                ran_at=ran_at,
                duration_s=time.monotonic() - started,
                candidates=len(outcomes),
                opted_out=len(dropped),
                results=tuple(results),
                log_size=size,
                appended=appended,
                sources=(),
                replayed=replayed,
            )
            _commit(state, summary, Discovery(), dropped, ran_at)
    return summary


__all__ = ["append_observations", "observe", "read_batches"]
