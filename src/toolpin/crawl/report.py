"""Reports from the verified log: what changed since a kept checkpoint, and the month.

Both are built from the log's tiles and blobs alone (never from crawl state), after a full
audit (:func:`toolpin.publog.verify.verify_log`), so anyone holding the log and its
verifier key can rebuild them and get the same bytes.

* :func:`since_report`: the entries after a checkpoint you kept (or after a time), with the
  RFC 9162 consistency proof from the kept tree to the signed checkpoint and each entry's
  inclusion proof; a watch list says whether a server you care about changed.
* :func:`monthly_report`: the month's drift: servers changed, by label *totals* (never a
  label against a named server), which servers by count of tools, the crawl gaps, each
  change first seen after a gap dated by its window, the start and end trees of the month
  and the consistency proofs from start to end to the signed checkpoint.
  :func:`verify_monthly` rebuilds one from the tiles and compares.

**A change's window.** A change of a server was first seen at ``observedAt``; it happened
after the last good look that still saw the previous surface (``previousLookAt``, written
by the crawler since that field exists) or, in entries without it, after the server's
previous entry. When that window is wider than :data:`GAP_HOURS`, the crawl had a gap and
the change is dated by the window, not by the day it was noticed.

**No third-party text.** A report carries ids, digests, counts, dates and label keys.
Server names are shown only when they are plain identifiers (:data:`SAFE_NAME`); tool
names and other names only with ``show_text``, and then through
:func:`toolpin.core.render.visible`.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from toolpin.core.drift import CHANGED, Drift, compare
from toolpin.core.render import clip, counted, visible
from toolpin.core.snapshot import Kind, Snapshot
from toolpin.crawl.record import RECORD_TYPE, RECORD_VERSION
from toolpin.errors import InputError, LogError

GAP_HOURS: Final = 48
"""A change window wider than this is a crawl gap (the change is dated by its window)."""

SAFE_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@/:+-]{0,127}")
MONTH: Final = re.compile(r"(\d{4})-(0[1-9]|1[0-2])")
DURATION: Final = re.compile(r"([1-9][0-9]{0,4})([hd])")
SERVER_ID: Final = re.compile(r"[0-9a-f]{16}")
REPORT_TYPE: Final = "toolpin/monthly-drift-report"
SINCE_TYPE: Final = "toolpin/since-report"

__all__ = [
    "GAP_HOURS",
    "Change",
    "ExplainCache",
    "LogView",
    "ReportError",
    "explain_drift",
    "forget_times",
    "load_view",
    "monthly_report",
    "parse_duration",
    "since_atom",
    "since_report",
    "verify_monthly",
]


class ReportError(LogError):
    """A log that does not verify, or a blob that is not a definitions blob (exit 1)."""

    exit_code = 1


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def forget_times() -> None:
    """Drop the times kept by :func:`_parse_time` (a build that is done: what it kept
    would otherwise stay in the process, holding memory a next build cannot reuse)."""
    _parse_time.cache_clear()


@functools.lru_cache(maxsize=1 << 18)
def _parse_time(text: str) -> dt.datetime | None:
    """``text`` (ISO 8601 with a zone) as a UTC time, or ``None`` (kept for the times seen
    last: an entry's observation time is its server's next entry's last look, and a
    site's reports, forked from the process that read the log, ask again for every one;
    a log of 100,000 entries has as many times: they all fit)."""
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.astimezone(dt.UTC)


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_duration(text: str) -> dt.timedelta | None:
    """``24h`` / ``7d`` as a timedelta, or ``None`` when ``text`` is not a duration."""
    match = DURATION.fullmatch(text)
    if match is None:
        return None
    amount = int(match.group(1))
    return dt.timedelta(hours=amount) if match.group(2) == "h" else dt.timedelta(days=amount)


def safe_name(name: str, *, show_text: bool) -> str | None:
    """A server name fit for a report: a plain identifier, or (``show_text``) made visible."""
    if SAFE_NAME.fullmatch(name):
        return name
    return clip(visible(name), 128) if show_text else None


# ---- reading the log -------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One observation entry, explained against the same server's previous entry."""

    index: int
    server_id: str
    name: str
    observed_at: str
    previous: int | None
    window_from: str | None
    """The last time the previous surface was seen (None: first recorded)."""
    window_source: str | None
    """``"look"`` (``previousLookAt``) or ``"previous-entry"`` (older records)."""
    surface: str
    previous_surface: str | None
    counts: Mapping[str, int]
    previous_counts: Mapping[str, int]
    tools_added: tuple[str, ...] = ()
    tools_removed: tuple[str, ...] = ()
    tools_changed: tuple[str, ...] = ()
    schema_only: int = 0
    """Changed tools whose description is byte-identical (schema or annotations moved)."""
    other_changes: int = 0
    """Prompts, resources, templates, instructions or the server name."""
    labels: tuple[str, ...] = ()
    leaf_hash: bytes = b""

    @property
    def first(self) -> bool:
        return self.previous is None

    @functools.cached_property
    def observed(self) -> dt.datetime | None:
        """``observed_at`` as a time (read once: every report of a build asks)."""
        return _parse_time(self.observed_at)

    @functools.cached_property
    def gap(self) -> bool:
        if self.window_from is None:
            return False
        start, end = _parse_time(self.window_from), self.observed
        if start is None or end is None:
            return False
        return end - start > dt.timedelta(hours=GAP_HOURS)

    def to_json(self, *, show_text: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "server": self.server_id,
            "name": safe_name(self.name, show_text=show_text),
            "kind": "first-recorded" if self.first else "changed",
            "observedAt": self.observed_at,
            "window": None
            if self.first
            else {
                "from": self.window_from,
                "to": self.observed_at,
                "source": self.window_source,
                "gap": self.gap,
            },
            "surface": self.surface,
            "previousSurface": self.previous_surface,
            "previousEntry": self.previous,
            "counts": dict(self.counts),
            "leafHash": _b64(self.leaf_hash),
        }
        if not self.first:
            out["tools"] = {
                "added": len(self.tools_added),
                "removed": len(self.tools_removed),
                "changed": len(self.tools_changed),
                "schemaOnly": self.schema_only,
            }
            out["otherChanges"] = self.other_changes
            out["labels"] = list(self.labels)
            if show_text:
                out["toolNames"] = {
                    "added": [clip(visible(n), 128) for n in self.tools_added],
                    "removed": [clip(visible(n), 128) for n in self.tools_removed],
                    "changed": [clip(visible(n), 128) for n in self.tools_changed],
                }
        return out


@dataclass
class LogView:
    """The verified log's observations up to one tree size, with proofs from its tiles."""

    log_dir: Path
    origin: str
    size: int
    root: bytes
    note: str
    changes: list[Change]
    other_entries: int = 0
    """Entries that are not toolpin observations (never reported, only counted)."""
    _log: Any = field(default=None, repr=False)
    _times: list[dt.datetime] | None = field(default=None, repr=False)

    def observed_times(self) -> list[dt.datetime]:
        """Each change's observation time, in the order of :attr:`changes` (every change
        of a view has one: an entry without is not an observation)."""
        if self._times is None:
            times: list[dt.datetime] = []
            for change in self.changes:
                moment = change.observed
                if moment is None:
                    raise ReportError("an observation has no usable time")
                times.append(moment)
            self._times = times
        return self._times

    def root_at(self, size: int) -> bytes:
        return bytes(self._log.root(size))

    def consistency(self, old: int, new: int) -> list[str]:
        return [_b64(h) for h in self._log.consistency_proof(old, new)]

    def inclusion(self, index: int) -> list[str]:
        return [_b64(h) for h in self._log.inclusion_proof(index, self.size)]

    def checkpoint_json(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "size": self.size,
            "root": _b64(self.root),
            "note": self.note,
        }


def _snapshot(blobs: Any, ref: str, index: int, surface: str) -> Snapshot:
    """The definitions of entry ``index``: its blob (digest-checked on read, the digest
    signed in the entry) parsed as toolpin's own bytes, then checked against the entry's
    surface hash."""
    from toolpin.lockfile.native import entry_from_json

    raw = blobs.get(ref)
    try:
        doc = json.loads(raw)
        snapshot = entry_from_json(doc, path=Path(ref), name=str(index), trusted=True).snapshot
    except InputError as exc:
        raise ReportError(f"entry {index}: its blob is unusable ({exc.message})") from None
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ReportError(f"entry {index}: its blob is not a definitions blob") from None
    if snapshot.surface_hash() != surface:
        raise ReportError(f"entry {index}: its blob does not match the entry's surface digest")
    return snapshot


def _explain(old: Snapshot, new: Snapshot) -> dict[str, Any]:
    return explain_drift(compare(old, new))


def explain_drift(drift: Drift) -> dict[str, Any]:
    """What a report says of one change: tool names added, removed and changed, the
    schema-only count, other changes and the label keys (from :func:`compare`'s drift)."""
    tools = [c for c in drift.changes if c.kind is Kind.TOOL]
    changed = [c for c in tools if c.status == CHANGED]
    labels: set[str] = set()
    for item in drift.changes:
        labels.update(item.label_keys)
    if drift.instructions is not None:
        labels.update(x.key for x in drift.instructions.labels)
    if drift.identity.name_changed:
        labels.add("server-name")
    others = len(drift.changes) - len(tools)
    others += (drift.instructions is not None) + drift.identity.name_changed
    return {
        "tools_added": tuple(c.key for c in tools if c.status == "added"),
        "tools_removed": tuple(c.key for c in tools if c.status == "removed"),
        "tools_changed": tuple(c.key for c in changed),
        "schema_only": sum(1 for c in changed if not c.description_changed),
        "other_changes": others,
        "labels": tuple(sorted(labels)),
    }


def _record_fields(value: Mapping[str, Any]) -> tuple[str, str, str, str, str | None] | None:
    if value.get("type") != RECORD_TYPE or value.get("v") != RECORD_VERSION:
        return None
    server, digests = value.get("server"), value.get("digests")
    observed, blob = value.get("observedAt"), value.get("blob")
    if not isinstance(server, dict) or not isinstance(digests, dict):
        return None
    server_id, surface, name = server.get("id"), digests.get("surface"), server.get("name")
    if not (
        isinstance(server_id, str)
        and SERVER_ID.fullmatch(server_id)
        and isinstance(surface, str)
        and isinstance(observed, str)
        and _parse_time(observed) is not None
        and isinstance(blob, str)
    ):
        return None
    look = value.get("previousLookAt")
    look_text = look if isinstance(look, str) and _parse_time(look) is not None else None
    return server_id, name if isinstance(name, str) else "", surface, observed, look_text


ReportObservation = tuple[str, str, str, str, str | None, dict[str, int], bytes, str]
"""What a report reads of one log entry: server id, name, surface digest, observation
time, last good look before, counts, leaf hash and blob reference."""


def observation_of(value: Mapping[str, Any], leaf: bytes) -> ReportObservation | None:
    """The report's reading of one decoded entry (``None``: not an observation)."""
    fields = _record_fields(value)
    if fields is None:
        return None
    server_id, name, surface, observed, look = fields
    return server_id, name, surface, observed, look, _counts(value), leaf, value["blob"]


def _counts(value: Mapping[str, Any]) -> dict[str, int]:
    counts = value.get("counts")
    if not isinstance(counts, dict):
        return {}
    return {k: v for k, v in sorted(counts.items()) if isinstance(v, int) and v >= 0}


class ExplainCache:
    """Explanations of changes already made, kept between builds (entries never change).

    One JSON file: ``{"v", "toolpin", "origin", "entries": {index: [leaf hash, previous
    index, explanation]}}``. An entry is reused only when its leaf hash and previous entry
    are the same; a file of another toolpin version (label rules may differ) or another
    log is ignored, and an unreadable one is rebuilt.
    """

    def __init__(self, path: Path, origin: str) -> None:
        from toolpin import __version__

        self.path = path
        self.header = {"v": 1, "toolpin": __version__, "origin": origin}
        self.entries: dict[str, list[Any]] = {}
        self.dirty = False
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(doc, dict) and all(doc.get(k) == v for k, v in self.header.items()):
            entries = doc.get("entries")
            if isinstance(entries, dict):
                self.entries = entries

    def get(self, index: int, leaf: str, previous: int) -> dict[str, Any] | None:
        hit = self.entries.get(str(index))
        if not (isinstance(hit, list) and len(hit) == 3 and hit[:2] == [leaf, previous]):
            return None
        value = hit[2]
        if not isinstance(value, dict):
            return None
        try:
            return {
                "tools_added": tuple(str(x) for x in value["tools_added"]),
                "tools_removed": tuple(str(x) for x in value["tools_removed"]),
                "tools_changed": tuple(str(x) for x in value["tools_changed"]),
                "schema_only": int(value["schema_only"]),
                "other_changes": int(value["other_changes"]),
                "labels": tuple(str(x) for x in value["labels"]),
            }
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, index: int, leaf: str, previous: int, value: Mapping[str, Any]) -> None:
        self.entries[str(index)] = [
            leaf,
            previous,
            {k: list(v) if isinstance(v, tuple) else v for k, v in value.items()},
        ]
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        from toolpin.util.fs import atomic_write

        doc = {**self.header, "entries": self.entries}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, json.dumps(doc, separators=(",", ":")).encode("utf-8"))
        self.dirty = False


def load_view(
    log_dir: str | Path,
    verifier: Any,
    *,
    since_note: str | None = None,
    as_of_note: str | None = None,
    cache: Path | None = None,
    known: Mapping[int, tuple[int, Mapping[str, Any]]] | None = None,
    audited: Any = None,
    observations: Sequence[ReportObservation | None] | None = None,
    policy: Any = None,
) -> LogView:
    """Audit the log and read every observation up to its signed checkpoint.

    ``since_note``: a kept checkpoint the log must be consistent with. ``as_of_note``: read
    the log only up to this (older, signed) checkpoint, after checking the log extends it.
    ``cache``: a file of earlier explanations (:class:`ExplainCache`), so that a rebuild
    explains only new entries. ``known``: explanations the caller already made of these
    entries (``{index: (previous index, explain_drift(...))}``), used when the previous entry
    is the same. ``audited``: the
    :class:`~toolpin.publog.checkpoint.Checkpoint` the caller's own full audit of this log
    just verified (not with ``since_note`` or ``as_of_note``): the audit is not repeated, and
    the entries up to it are read. ``observations``: with ``audited``, what
    :func:`observation_of` gives of each entry up to it (the caller read them along with
    its audit), so the entries are not read again. Raises :class:`ReportError` (exit 1:
    the log is bad) or :class:`InputError` (exit 2).
    """
    from toolpin.publog.blobs import BlobStore
    from toolpin.publog.checkpoint import open_checkpoint
    from toolpin.publog.entries import decode_entry
    from toolpin.publog.merkle import leaf_hash
    from toolpin.publog.tiles import TileLog
    from toolpin.publog.verify import verify_log

    root = Path(log_dir)
    kept = since_note if as_of_note is None else as_of_note
    if audited is not None and kept is None and policy is None:
        checkpoint = audited
    else:
        result = verify_log(root, verifier, kept, policy=policy)
        if result.exit_code == 2:
            raise InputError(result.reason)
        if not result.ok or result.checkpoint is None:
            raise ReportError(f"the log does not verify: {result.reason}")
        checkpoint = result.checkpoint
    log = TileLog.open(root, verifier)
    note = log.checkpoint_note
    assert note is not None
    if audited is not None and kept is None and log.checkpoint != audited:
        raise ReportError("the log changed while it was being read; build again")
    if as_of_note is not None:
        try:
            checkpoint = open_checkpoint(as_of_note, verifier)
        except LogError as exc:
            raise InputError(f"the report's checkpoint is unusable: {exc.message}") from None
        note = as_of_note
    blobs = BlobStore(root)
    explained = ExplainCache(cache, checkpoint.origin) if cache is not None else None
    # server id -> (index, blob ref, surface, counts, observedAt, snapshot once read)
    latest: dict[str, list[Any]] = {}
    changes: list[Change] = []
    others = 0
    read: Iterable[ReportObservation | None]
    if observations is not None and checkpoint is audited and len(observations) == audited.size:
        read = observations
    else:
        read = (
            observation_of(decode_entry(raw, canonical=False), leaf_hash(raw))
            for raw in log.iter_entries(0, checkpoint.size)
        )
    for index, observation in enumerate(read):
        if observation is None:
            others += 1
            continue
        server_id, name, surface, observed, look, counts, leaf, blob = observation
        before = latest.get(server_id)
        extra: dict[str, Any] = {}
        snapshot: Snapshot | None = None
        if before is not None:
            key = _b64(leaf)
            hit = None
            if known is not None and index in known and known[index][0] == before[0]:
                hit = dict(known[index][1])
            if hit is None and explained is not None:
                hit = explained.get(index, key, before[0])
            if hit is None:
                if before[5] is None:
                    before[5] = _snapshot(blobs, before[1], before[0], before[2])
                snapshot = _snapshot(blobs, blob, index, surface)
                hit = _explain(before[5], snapshot)
                if explained is not None:
                    explained.put(index, key, before[0], hit)
            extra = hit
        changes.append(
            Change(
                index=index,
                server_id=server_id,
                name=name,
                observed_at=observed,
                previous=before[0] if before else None,
                window_from=None if before is None else (look or before[4]),
                window_source=None if before is None else ("look" if look else "previous-entry"),
                surface=surface,
                previous_surface=before[2] if before else None,
                counts=counts,
                previous_counts=before[3] if before else {},
                leaf_hash=leaf,
                **extra,
            )
        )
        latest[server_id] = [index, blob, surface, counts, observed, snapshot]
    if explained is not None:
        explained.save()
    return LogView(
        log_dir=root,
        origin=checkpoint.origin,
        size=checkpoint.size,
        root=checkpoint.root,
        note=note,
        changes=changes,
        other_entries=others,
        _log=log,
    )


# ---- since a checkpoint ----------------------------------------------------------------


def _watched(change: Change, watch: Sequence[str]) -> bool:
    return change.server_id in watch or change.name in watch


def since_report(
    view: LogView,
    *,
    old_size: int | None = None,
    old_root: bytes | None = None,
    cutoff: dt.datetime | None = None,
    watch: Sequence[str] = (),
    show_text: bool = False,
    generated_at: str,
) -> dict[str, Any]:
    """Entries after a kept tree (``old_size``/``old_root``) or observed since ``cutoff``.

    With ``cutoff``, the report covers the log's suffix from the first entry observed at or
    after it; its start tree is computed from the tiles (not a checkpoint anyone kept).
    """
    if old_size is None:
        if cutoff is None:
            raise ValueError("give old_size or cutoff")
        old_size = next(
            (c.index for c in view.changes if (t := c.observed) is not None and t >= cutoff),
            view.size,
        )
    if not 0 <= old_size <= view.size:
        raise ReportError(f"the kept tree (size {old_size}) is beyond the log")
    start_root = view.root_at(old_size) if old_root is None else old_root
    selected = [c for c in view.changes if c.index >= old_size]
    rows = []
    for change in selected:
        row = change.to_json(show_text=show_text)
        row["inclusionProof"] = view.inclusion(change.index)
        row["watched"] = _watched(change, watch)
        rows.append(row)
    watched_changed = sorted({c.server_id for c in selected if not c.first and _watched(c, watch)})
    labels: dict[str, int] = {}
    for change in selected:
        for key in change.labels:
            labels[key] = labels.get(key, 0) + 1
    return {
        "type": SINCE_TYPE,
        "v": 1,
        "generatedAt": generated_at,
        "since": {
            "size": old_size,
            "root": _b64(start_root),
            "kept": old_root is not None,
            "cutoff": _iso(cutoff) if cutoff is not None else None,
        },
        "checkpoint": view.checkpoint_json(),
        "consistencyProof": view.consistency(old_size, view.size),
        "entries": view.size - old_size,
        "changes": rows,
        "labels": dict(sorted(labels.items())),
        "watch": list(watch),
        "watchedChanged": watched_changed,
    }


# ---- the month ---------------------------------------------------------------------------


def _month_bounds(month: str) -> tuple[dt.datetime, dt.datetime]:
    match = MONTH.fullmatch(month)
    if match is None:
        raise InputError(f"--month {visible(month)[:20]!r} is not YYYY-MM")
    year, number = int(match.group(1)), int(match.group(2))
    start = dt.datetime(year, number, 1, tzinfo=dt.UTC)
    end = dt.datetime(year + (number == 12), number % 12 + 1, 1, tzinfo=dt.UTC)
    return start, end


def _merge_gaps(windows: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    spans = sorted(windows)
    merged: list[dict[str, Any]] = []
    for start, end in spans:
        if merged and start <= merged[-1]["to"]:
            merged[-1]["to"] = max(merged[-1]["to"], end)
            merged[-1]["changes"] += 1
        else:
            merged.append({"from": start, "to": end, "changes": 1})
    return merged


def monthly_report(view: LogView, month: str, *, generated_at: str) -> dict[str, Any]:
    """The month's drift report over ``view`` (a superset of mcp-pin's monthly JSON).

    The month holds the entries first observed in it; its start tree is the log before
    the first of them, its end tree the log up to the last of them. ``partial``: the
    report was made (``generated_at``) before the month ended.
    """
    start_time, end_time = _month_bounds(month)
    times = view.observed_times()
    inside = [c for c, t in zip(view.changes, times, strict=True) if start_time <= t < end_time]
    start_size = inside[0].index if inside else _first_after(view, start_time)
    end_size = inside[-1].index + 1 if inside else start_size
    straggler = sum(1 for c in view.changes if start_size <= c.index < end_size) - len(inside)
    changed = [c for c in inside if not c.first]
    new = [c for c in inside if c.first]
    labels: dict[str, int] = {}
    for change in changed:
        for key in change.labels:
            labels[key] = labels.get(key, 0) + 1
    rows: dict[str, dict[str, Any]] = {}
    for change in changed:
        row = rows.setdefault(
            change.server_id,
            {
                "server": change.server_id,
                "name": safe_name(change.name, show_text=False),
                "events": 0,
                "toolsBefore": change.previous_counts.get("tools"),
                "toolsAfter": None,
                "toolsAdded": 0,
                "toolsRemoved": 0,
                "toolsChanged": 0,
                "schemaOnly": 0,
                "firstChange": {
                    "from": change.window_from,
                    "to": change.observed_at,
                    "gap": change.gap,
                },
            },
        )
        row["events"] += 1
        row["toolsAfter"] = change.counts.get("tools")
        row["toolsAdded"] += len(change.tools_added)
        row["toolsRemoved"] += len(change.tools_removed)
        row["toolsChanged"] += len(change.tools_changed)
        row["schemaOnly"] += change.schema_only
    by_tools = sorted(
        rows.values(),
        key=lambda r: (-(r["toolsAdded"] + r["toolsRemoved"] + r["toolsChanged"]), r["server"]),
    )
    tracked = {c.server_id for c, t in zip(view.changes, times, strict=True) if t < end_time}
    gaps = _merge_gaps(
        (c.window_from, c.observed_at) for c in changed if c.gap and c.window_from is not None
    )
    made = _parse_time(generated_at)
    return {
        "type": REPORT_TYPE,
        "v": 1,
        "report": "toolpin monthly drift report",
        "month": month,
        "partial": made is None or made < end_time,
        "generatedAt": generated_at,
        "origin": view.origin,
        "checkpoint": view.checkpoint_json(),
        "start": {"size": start_size, "root": _b64(view.root_at(start_size))},
        "end": {"size": end_size, "root": _b64(view.root_at(end_size))},
        "consistency": {
            "startToEnd": view.consistency(start_size, end_size),
            "endToCheckpoint": view.consistency(end_size, view.size),
        },
        "servers": {
            "tracked": len(tracked),
            "recordedNew": len(new),
            "changed": len(rows),
        },
        "changes": {
            "events": len(changed),
            "toolsAdded": sum(len(c.tools_added) for c in changed),
            "toolsRemoved": sum(len(c.tools_removed) for c in changed),
            "toolsChanged": sum(len(c.tools_changed) for c in changed),
            "schemaOnly": sum(c.schema_only for c in changed),
            "otherChanges": sum(c.other_changes for c in changed),
            "afterGap": sum(1 for c in changed if c.gap),
        },
        "labels": dict(sorted(labels.items())),
        "byToolCount": by_tools,
        "gaps": gaps,
        "outOfMonthInRange": straggler,
        "notes": [
            "Counted from the verified log only: one entry per change of a server's surface.",
            "A change belongs to the month it was first seen in; when the window since the "
            f"last good look is wider than {GAP_HOURS} h it is dated by that window (gaps).",
            "Labels are mechanical triage rules; they are totals and never shown against a "
            "named server.",
            "Looks that found nothing new are not in the log, so a gap is only visible where "
            "a change was seen after it.",
        ],
    }


def _first_after(view: LogView, moment: dt.datetime) -> int:
    for change in view.changes:
        observed = change.observed
        if observed is not None and observed >= moment:
            return change.index
    return view.size


def verify_monthly(log_dir: str | Path, verifier: Any, report: Mapping[str, Any]) -> list[str]:
    """Rebuild ``report`` from the log at the report's own checkpoint; return the paths of
    members that differ (empty: it matches). ``generatedAt`` is not compared."""
    if report.get("type") != REPORT_TYPE or report.get("v") != 1:
        raise InputError("the file is not a toolpin monthly drift report")
    month, checkpoint = report.get("month"), report.get("checkpoint")
    if not isinstance(month, str) or not isinstance(checkpoint, dict):
        raise InputError("the report has no month or checkpoint")
    note = checkpoint.get("note")
    if not isinstance(note, str):
        raise InputError("the report's checkpoint carries no signed note")
    view = load_view(log_dir, verifier, as_of_note=note)
    generated = report.get("generatedAt")
    rebuilt = monthly_report(
        view, month, generated_at=generated if isinstance(generated, str) else ""
    )
    return _differences(dict(report), rebuilt, "")


def _differences(a: Any, b: Any, path: str) -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            if key == "generatedAt" and not path:
                continue
            if key not in a or key not in b:
                out.append(f"{path}/{key}")
            else:
                out.extend(_differences(a[key], b[key], f"{path}/{key}"))
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [path or "/"]
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out.extend(_differences(x, y, f"{path}/{i}"))
        return out
    if type(a) is not type(b) or a != b:
        return [path or "/"]
    return []


# ---- Atom ------------------------------------------------------------------------------------


def _title(row: Mapping[str, Any]) -> str:
    who = row["name"] or row["server"]
    if row["kind"] == "first-recorded":
        return f"{who}: first recorded ({counted(row['counts'].get('tools', 0), 'tool')})"
    tools = row["tools"]
    return (
        f"{who}: changed (tools +{tools['added']} -{tools['removed']} ~{tools['changed']}, "
        f"{tools['schemaOnly']} schema only)"
    )


_NOT_XML: Final = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    """``text`` escaped for XML 1.0: markup characters, and characters XML cannot hold
    (U+FFFE, U+FFFF, lone surrogates, controls) written as ``\\u{hex}``."""
    from xml.sax.saxutils import escape

    return escape(_NOT_XML.sub(lambda m: f"\\u{{{ord(m.group()):x}}}", text))


def since_atom(report: Mapping[str, Any], *, feed_url: str | None = None) -> str:
    """An Atom (RFC 4287) feed of a since-report: ids never change, no third-party prose.

    Entry id ``urn:toolpin:<origin>:<index>:<leaf hash hex>``; ``updated`` is the entry's
    observation time; the feed's is the last entry's (the kept tree's cutoff or the report
    time when nothing changed).
    """
    from xml.sax.saxutils import quoteattr

    escape = _xml_text
    checkpoint = report["checkpoint"]
    origin = checkpoint["origin"]
    rows = report["changes"]
    updated = max((r["observedAt"] for r in rows), default=report["generatedAt"])
    since = report["since"]
    size = since["size"]
    lines = [
        '<?xml version="1.0" encoding="utf-8"?>',
        '<feed xmlns="http://www.w3.org/2005/Atom">',
        f"  <id>{escape(f'urn:toolpin:{origin}:since:{size}')}</id>",
        f"  <title>{escape(f'{origin}: changes after tree size {size}')}</title>",
        f"  <updated>{escape(updated)}</updated>",
        f"  <author><name>{escape(origin)}</name></author>",
    ]
    if feed_url is not None:
        lines.append(f'  <link rel="self" href={quoteattr(feed_url)}/>')
    for row in rows:
        index = row["index"]
        leaf = base64.b64decode(row["leafHash"]).hex()
        parts = [f"entry {index}", f"surface {row['surface']}"]
        if row["kind"] == "changed":
            window = row["window"]
            parts.append(f"window {window['from']} to {window['to']}")
            if window["gap"]:
                parts.append("first seen after a crawl gap")
            if row["labels"]:
                parts.append("labels " + ", ".join(row["labels"]))
        parts.append(f"verify: toolpin log prove --entry {index}")
        entry_id = f"urn:toolpin:{origin}:{index}:{leaf}"
        lines += [
            "  <entry>",
            f"    <id>{escape(entry_id)}</id>",
            f"    <title>{escape(_title(row))}</title>",
            f"    <updated>{escape(row['observedAt'])}</updated>",
            f'    <content type="text">{escape("; ".join(parts))}</content>',
            "  </entry>",
        ]
    lines.append("</feed>")
    return "\n".join(lines) + "\n"
