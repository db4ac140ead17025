"""The verified log, read into one history per server.

:func:`read_log` runs :func:`toolpin.publog.verify.verify_log` first and refuses a log that
does not verify (the site is never built from one). It then reads every entry once, keeps
the observation records (``toolpin/observation`` v1, see :mod:`toolpin.crawl.record`) and
groups them by server id. Only ids of 16 lower-case hex digits get a page (file names come
from nothing else); any other record is counted as unreadable and left out of the pages,
never guessed at. Definitions are read from the blobs (already checked against their
digests by the audit) and checked against the entry's surface digest.

Liveness (the last good look) comes from the crawl state when one is given: only its
timestamps are read, never its free text (errors, descriptors).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from toolpin.core.snapshot import Snapshot
from toolpin.errors import InputError, LogError
from toolpin.publog.blobs import BlobStore
from toolpin.publog.checkpoint import Checkpoint
from toolpin.publog.note import Verifier

if TYPE_CHECKING:
    from toolpin.crawl.report import ReportObservation

SERVER_ID: Final = re.compile(r"[0-9a-f]{16}")
TIMESTAMP: Final = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z")
RECORD_TYPE: Final = "toolpin/observation"

__all__ = [
    "Entries",
    "LogView",
    "ServerHistory",
    "SiteCheckpoint",
    "Version",
    "liveness",
    "optout_names",
    "parse_time",
    "read_log",
    "view_of",
]


class UnverifiedLogError(LogError):
    """The log does not verify: no site is built from it."""

    exit_code = 1


@functools.lru_cache(maxsize=1 << 18)
def parse_time(text: str) -> dt.datetime:
    """A record timestamp (``2026-11-30T04:05:51Z``) as an aware UTC datetime (kept for
    the times seen last: the pages, badges, feeds and API ask for the same ones, and a
    log of 100,000 entries has as many times: they all fit)."""
    if not TIMESTAMP.fullmatch(text):
        raise ValueError(f"not a UTC timestamp: {text!r}")
    return dt.datetime.fromisoformat(text[:19]).replace(tzinfo=dt.UTC)


MONTHS: Final = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
"""English month abbreviations for the dates pages and badges show (never the locale's)."""


@dataclass(frozen=True)
class SiteCheckpoint:
    """The checkpoint a site was built from, as every page names it."""

    origin: str
    size: int
    root: str
    """Base64 root hash, as in the checkpoint note."""
    time: str
    """The observation time of the last entry (checkpoints carry no clock of their own)."""
    note: str
    """The signed checkpoint text, verbatim."""
    vkey: str


@dataclass(frozen=True, slots=True)
class Version:
    """One logged observation of a server (a new or changed surface)."""

    index: int
    leaf_hash: str
    observed_at: str
    last_good_look: str | None
    """The last good look that saw the previous surface (the change came after it)."""
    surface: str
    counts: Mapping[str, int]
    digests: Mapping[str, str | None]
    blob: str | None
    previous: int | None
    name: str
    source: str
    transport: str
    url: str | None
    package: Mapping[str, str] | None
    server_info: Mapping[str, str] | None
    era: str | None
    protocol_version: str | None

    @property
    def tools(self) -> int | None:
        return self.counts.get("tools")


@dataclass
class ServerHistory:
    """Every logged version of one server, oldest first."""

    id: str
    versions: list[Version] = field(default_factory=list)
    last_ok: str | None = None
    """The last good look known (crawl state, or the latest entry's time)."""
    opted_out: bool = False

    @property
    def latest(self) -> Version:
        return self.versions[-1]

    @property
    def first(self) -> Version:
        return self.versions[0]


@dataclass
class LogView:
    """What the site is built from: the verified checkpoint and every server's history."""

    checkpoint: SiteCheckpoint
    servers: dict[str, ServerHistory]
    log_dir: Path
    unreadable: int = 0
    """Entries that are not observation records this site can show (left out)."""
    leaf_hashes: list[bytes] = field(default_factory=list)
    audited: Checkpoint | None = None
    """The checkpoint :func:`read_log`'s full audit verified."""
    observations: list[ReportObservation | None] | None = None
    """The reports' reading of every entry up to it (:func:`toolpin.crawl.report.
    observation_of`), or ``None``."""
    _snapshots: dict[str, Snapshot] = field(default_factory=dict)
    _blobs: BlobStore | None = None

    def versions(self) -> Iterator[tuple[ServerHistory, Version]]:
        """Every version of every server, in log order."""
        items = [(s, v) for s in self.servers.values() for v in s.versions]
        items.sort(key=lambda item: item[1].index)
        return iter(items)

    def blob_store(self) -> BlobStore:
        """The log's blobs."""
        if self._blobs is None:
            from toolpin.publog.blobs import BlobStore

            self._blobs = BlobStore(self.log_dir)
        return self._blobs

    def snapshot(
        self, version: Version, *, keep: bool = True, data: bytes | None = None
    ) -> Snapshot:
        """The definitions of ``version``, read from its blob and checked against it
        (kept for the next call unless ``keep`` is false: a caller that keeps its own).
        ``data``: the blob's bytes, already read and checked against its digest."""
        if version.blob is None:
            raise InputError(f"entry {version.index} carries no definitions")
        cached = self._snapshots.get(version.blob)
        if cached is not None:
            return cached
        from toolpin.lockfile.native import entry_from_json

        if data is None:
            data = self.blob_store().get(version.blob)
        try:
            raw = json.loads(data)
            entry = entry_from_json(raw, path=Path(version.blob), name=f"entry {version.index}")
        except (ValueError, InputError) as exc:
            reason = getattr(exc, "message", "not JSON")
            raise LogError(
                f"the definitions of entry {version.index} are unusable: {reason}"
            ) from None
        snap = entry.snapshot
        # entry_from_json checked the blob's surfaceHash against its definitions
        if raw.get("surfaceHash") != version.surface:
            raise LogError(f"the definitions of entry {version.index} do not match its digest")
        if keep:
            self._snapshots[version.blob] = snap
        return snap


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def add_version(
    servers: dict[str, ServerHistory], index: int, leaf: bytes, value: Mapping[str, Any]
) -> bool:
    """Add entry ``index`` (``value``, its ``leaf`` hash) to its server's history;
    ``False`` when it is not an entry the site reads as a version."""
    found = _version(index, leaf, value)
    if found is None:
        return False
    server_id, version = found
    servers.setdefault(server_id, ServerHistory(server_id)).versions.append(version)
    return True


def _version(index: int, leaf: bytes, value: Mapping[str, Any]) -> tuple[str, Version] | None:
    """The version a decoded entry records, or ``None`` when it is not one we can show."""
    if value.get("type") != RECORD_TYPE or value.get("v") != 1:
        return None
    server, digests = value.get("server"), value.get("digests")
    if not isinstance(server, dict) or not isinstance(digests, dict):
        return None
    server_id = server.get("id")
    observed = value.get("observedAt")
    surface = digests.get("surface")
    if not (
        isinstance(server_id, str)
        and SERVER_ID.fullmatch(server_id)
        and isinstance(observed, str)
        and TIMESTAMP.fullmatch(observed)
        and isinstance(surface, str)
        and re.fullmatch(r"[0-9a-f]{64}", surface)
    ):
        return None
    last_good = _text(value.get("previousLookAt"))
    if last_good is not None and not TIMESTAMP.fullmatch(last_good):
        last_good = None
    counts_raw = value.get("counts")
    counts = (
        {k: n for k, n in counts_raw.items() if isinstance(n, int) and not isinstance(n, bool)}
        if isinstance(counts_raw, dict)
        else {}
    )
    package_raw = server.get("package")
    package = (
        {k: v for k, v in package_raw.items() if isinstance(v, str)}
        if isinstance(package_raw, dict)
        else None
    )
    info_raw = value.get("serverInfo")
    info = (
        {k: v for k, v in info_raw.items() if isinstance(v, str)}
        if isinstance(info_raw, dict)
        else None
    )
    protocol = value.get("protocol")
    protocol = protocol if isinstance(protocol, dict) else {}
    previous = value.get("previous")
    blob = _text(value.get("blob"))
    version = Version(
        index=index,
        leaf_hash=leaf.hex(),
        observed_at=observed,
        last_good_look=last_good,
        surface=surface,
        counts=counts,
        digests={k: v for k, v in digests.items() if isinstance(v, str) or v is None},
        blob=blob,
        previous=previous if isinstance(previous, int) and not isinstance(previous, bool) else None,
        name=_text(server.get("name")) or "",
        source=_text(server.get("source")) or "unknown",
        transport=_text(server.get("transport")) or "unknown",
        url=_text(server.get("url")),
        package=package,
        server_info=info,
        era=_text(protocol.get("era")),
        protocol_version=_text(protocol.get("version")),
    )
    return server_id, version


def liveness(state_path: Path | None) -> dict[str, str]:
    """``{server id: last good look}`` from a crawl state file (timestamps only)."""
    if state_path is None:
        return {}
    import sqlite3

    if not state_path.is_file():
        raise InputError(f"the crawl state {state_path} does not exist")
    try:
        db = sqlite3.connect(f"file:{state_path}?mode=ro", uri=True)
        try:
            rows = db.execute("SELECT id, last_ok FROM servers").fetchall()
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        raise InputError(f"the crawl state {state_path} is not usable ({exc})") from None
    return {
        i: t
        for i, t in rows
        if isinstance(i, str) and isinstance(t, str) and TIMESTAMP.fullmatch(t)
    }


def optout_names(log_dir: Path) -> frozenset[str]:
    from toolpin.crawl.optout import load_optout

    return load_optout([log_dir])


APART_FROM: Final = 4000
"""Entries from which the log is read while another process audits it (two cores)."""


@dataclass
class Entries:
    """What one reading of the log's entries gives (before the audit's verdict)."""

    checkpoint: Checkpoint | None
    note: str
    servers: dict[str, ServerHistory]
    unreadable: int
    leaves: list[bytes]
    observations: list[ReportObservation | None] | None
    """The reports' reading of every entry (``None`` when one could not be decoded: the
    reports then read the log themselves, and say why they cannot)."""


def _read_entries(log_dir: Path) -> Entries:
    """Every entry of the log, read into server histories (with the cyclic collector
    paused: what is built holds no cycle, see :mod:`toolpin.core.acyclic`)."""
    from toolpin.core.acyclic import collector_paused

    with collector_paused():
        return _read(log_dir)


def _read(log_dir: Path) -> Entries:
    from toolpin.crawl.report import observation_of
    from toolpin.publog.entries import decode_entry
    from toolpin.publog.merkle import leaf_hash
    from toolpin.publog.tiles import TileLog

    log = TileLog.open(log_dir)
    servers: dict[str, ServerHistory] = {}
    unreadable = 0
    leaves: list[bytes] = []
    observations: list[ReportObservation | None] | None = []
    for index, raw in enumerate(log.iter_entries(0, log.size)):
        leaf = leaf_hash(raw)
        leaves.append(leaf)
        try:
            value = decode_entry(raw, canonical=False)
        except LogError:
            unreadable += 1
            observations = None
            continue
        if observations is not None:
            observations.append(observation_of(value, leaf))
        if not add_version(servers, index, leaf, value):
            unreadable += 1
    return Entries(
        log.checkpoint, log.checkpoint_note or "", servers, unreadable, leaves, observations
    )


def _unverified_size(log_dir: Path) -> int:
    """The size the log's checkpoint claims (only to choose how to read it)."""
    from toolpin.publog.tiles import TileLog

    try:
        checkpoint = TileLog.open(log_dir).checkpoint
    except (LogError, OSError):
        return 0
    return checkpoint.size if checkpoint is not None else 0


def read_log(log_dir: Path, vkey: Verifier, *, state: Path | None = None) -> LogView:
    """Verify the log in ``log_dir`` against ``vkey`` and read every server's history.

    Raises :class:`UnverifiedLogError` (exit 1) when the log does not verify. On a large
    log with two cores the entries are read while another process audits the log; what
    was read is used only once the audit says the log verifies, at the checkpoint read.
    """
    from toolpin.publog.verify import verify_log
    from toolpin.site.forked import Apart, cores

    apart = cores() > 1 and _unverified_size(log_dir) >= APART_FROM
    audit = Apart(verify_log, log_dir, vkey, apart=apart)
    entries: Entries | Exception | None = None
    try:
        if apart:
            try:
                entries = _read_entries(log_dir)
            except (LogError, InputError, OSError) as exc:
                entries = exc  # the audit's verdict comes first
        result = audit.result()
    finally:
        audit.close()
    if not result.ok or result.checkpoint is None:
        if result.exit_code == 2:
            raise InputError(result.reason)
        raise UnverifiedLogError(
            f"the log does not verify: {result.reason}",
            advice="No site is built from a log that does not verify.",
        )
    checkpoint: Checkpoint = result.checkpoint
    if isinstance(entries, Exception):
        raise entries
    if entries is None:
        entries = _read_entries(log_dir)
    if entries.checkpoint != checkpoint:
        raise UnverifiedLogError("the log changed while it was being read; build again")
    return view_of(entries, checkpoint, log_dir, vkey, state=state)


def view_of(
    entries: Entries,
    checkpoint: Checkpoint,
    log_dir: Path,
    vkey: Verifier,
    *,
    state: Path | None = None,
) -> LogView:
    """The view of a verified reading of the log (``checkpoint``: the one verified), with
    the crawl state's last good looks and the opt-out lists applied."""
    servers = entries.servers
    live = liveness(state)
    names = optout_names(log_dir)
    for history in servers.values():
        latest = history.latest.observed_at
        known = live.get(history.id)
        history.last_ok = max(latest, known) if known else latest
        history.opted_out = _listed(history, names)
    time = max((h.latest.observed_at for h in servers.values()), default="")
    site_checkpoint = SiteCheckpoint(
        origin=checkpoint.origin,
        size=checkpoint.size,
        root=checkpoint.root_b64,
        time=time,
        note=entries.note,
        vkey=vkey.text,
    )
    return LogView(
        site_checkpoint,
        servers,
        log_dir,
        entries.unreadable,
        entries.leaves,
        checkpoint,
        observations=entries.observations,
    )


def _listed(history: ServerHistory, names: frozenset[str]) -> bool:
    if not names:
        return False
    for version in history.versions:
        if version.name.casefold() in names:
            return True
        package = version.package or {}
        if package.get("name", "").casefold() in names:
            return True
    return False
