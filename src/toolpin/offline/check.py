"""The offline CI gate: pin a saved export, check a later export against the lock.

``pin`` and ``check`` take the flags, findings and exit codes of mcp-tool-pin-check 0.2.2
(0 unchanged, 1 drift, 2 unusable input) and go further: whole definitions are hashed
(every member the server sent), prompts, resources, templates and instructions are
pinned when the export has them, schema findings follow a direction-aware taxonomy, and
every change carries triage labels. ``check`` also reads that tool's lockfiles.

Soundness of ``check``: the verdict always comes from a full verification of both files:
the export parsed strictly and hashed, and every definition of the lock re-hashed against
the hash recorded beside it. Nothing in a lock is trusted because of how it looks: a
lock's own digest is unkeyed, so anyone who edits a lock can recompute it. There are two
shortcuts, both per-machine records keyed by the SHA-256 of exact bytes, both skipped by
``check --no-cache``. The lock's own verification is remembered by
:mod:`toolpin.lockfile.verified`, with the lock's pinned set hashes: the same lock bytes
are not parsed again when the export's freshly computed set hashes all match them (the
listing is always parsed and hashed in full). And a record of verified results
(``$TOOLPIN_HOME/cache/check``, beside which the command line keeps what it printed, see
:mod:`toolpin.offline.remembered`):
after a full check finds nothing changed, the SHA-256 of the exact lock and export bytes
(plus toolpin's version and the entry name) is remembered, and a later check of the very
same bytes returns that verdict without re-hashing. Only toolpin writes that directory,
so the record is as trustworthy as toolpin's own installation; any drift, error or
unreadable record takes the full path.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from toolpin.core.canonical import EXPORT_DEPTH, JSONValue, parse_json
from toolpin.core.drift import Drift, IdentityReport, compare
from toolpin.core.snapshot import (
    KINDS,
    Export,
    Identity,
    Kind,
    export_from_bytes,
    snapshot_from_export,
)
from toolpin.errors import InputError, JSONError, ListingError, LockfileError, StoreError
from toolpin.lockfile import verified as verified_locks
from toolpin.lockfile.legacy import NOTE as LEGACY_NOTE
from toolpin.lockfile.legacy import LegacyLock, check_legacy, looks_legacy, read_legacy
from toolpin.lockfile.native import (
    FORMAT_KEY,
    LockEntry,
    Lockfile,
    lock_from_json,
    read_bytes,
    write_lock,
)
from toolpin.offline.remembered import CACHE_FORMAT, cache_dir, result_key
from toolpin.util.clock import utc_now
from toolpin.util.fs import atomic_write, ensure_private_dir, locked, toolpin_home

DEFAULT_ENTRY = "default"
_Entry = TypeVar("_Entry")


@dataclass(frozen=True)
class Listing:
    """A loaded export: the parsed snapshot and the digest of its raw bytes."""

    paths: tuple[Path, ...]
    export: Export
    raw: tuple[bytes, ...] = field(repr=False)

    @property
    def raw_sha256(self) -> str:
        """SHA-256 over the SHA-256 of each file's raw bytes (a lock's ``listingSha256``)."""
        digest = hashlib.sha256()
        for data in self.raw:
            digest.update(hashlib.sha256(data).digest())
        return digest.hexdigest()


def _read(path: Path) -> bytes:
    return read_bytes(path, InputError)


def _parse_listing(path: Path, data: bytes, *, numbers: str = "js") -> JSONValue:
    try:
        return parse_json(data, allow_bom=True, numbers=numbers, max_depth=EXPORT_DEPTH)
    except JSONError as exc:
        raise JSONError(f"{path} is not valid JSON: {exc.message}") from None


def load_listing(paths: Sequence[Path], raws: Sequence[bytes] | None = None) -> Listing:
    """Read one export, or the pages of one export (several files)."""
    if not paths:
        raise InputError("no listing given")
    if raws is None:
        raws = tuple(_read(p) for p in paths)
    raws = tuple(raws)
    export = export_from_bytes(raws, allow_bom=True)  # parsed and hashed in one pass
    if export is None:  # this path words every error
        docs = [_parse_listing(p, data) for p, data in zip(paths, raws, strict=True)]
        export = snapshot_from_export(docs, paged=True)
    return Listing(paths=tuple(paths), export=export, raw=raws)


def _label(value: str | None, flag: str, default: str) -> str:
    if value is None or value == "":
        return default
    if any(ord(ch) < 0x20 for ch in value):
        raise InputError(f"{flag} must be a single-line label")
    return value


def default_source(paths: Sequence[Path]) -> str:
    """The listing path as typed, or its file name when it is absolute (no home paths in locks)."""
    first = paths[0]
    return first.name if first.is_absolute() else str(first)


@dataclass(frozen=True)
class PinResult:
    """What ``pin`` wrote."""

    lock: Path
    entry_name: str
    entry: LockEntry
    partial: bool


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def pin(
    listing_paths: Sequence[Path],
    lock_path: Path,
    *,
    source: str | None = None,
    pinned_at: str | None = None,
    entry_name: str = DEFAULT_ENTRY,
) -> PinResult:
    """Pin an export into ``lock_path`` (atomically; nothing is written on any error).

    An existing toolpin lock keeps its other entries; a lock of another format (or an
    unreadable one) is only replaced when it is a mcp-tool-pin-check lock.
    """
    for path in listing_paths:
        if _same_file(path, lock_path):
            raise InputError("--lock must not be the listing file")
    source_label = _label(source, "--source", default_source(listing_paths))
    when = _label(pinned_at, "--pinned-at", utc_now())
    listing = load_listing(listing_paths)
    entry = LockEntry(
        snapshot=listing.export.snapshot,
        source=source_label,
        pinned_at=when,
        listing_sha256=listing.raw_sha256,
    )
    with _exclusive(lock_path):  # read-modify-write: other entries of the lock are kept
        servers: dict[str, LockEntry] = {}
        if lock_path.exists():
            servers = dict(_existing_entries(lock_path))
        servers[entry_name] = entry
        write_lock(lock_path, servers)
    return PinResult(
        lock=lock_path, entry_name=entry_name, entry=entry, partial=listing.export.partial
    )


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Serialise writers of one lockfile on this machine.

    The lock file lives in toolpin's own directory (keyed by the lockfile's resolved
    path), so nothing is left beside the user's lockfile. Without a usable home directory
    (a read-only CI home) the write goes ahead unserialised; it is still atomic.
    """
    key = hashlib.sha256(str(lock_path.resolve()).encode("utf-8", "surrogatepass")).hexdigest()
    try:
        directory = ensure_private_dir(toolpin_home() / "locks")
    except OSError:
        yield
        return
    with locked(directory / f"{key[:32]}.lock"):
        yield


def _existing_entries(lock_path: Path) -> dict[str, LockEntry]:
    data = read_bytes(lock_path)
    try:
        doc = parse_json(data, allow_bom=True)
    except JSONError:
        raise LockfileError(
            f"{lock_path} exists and is not a lockfile; refusing to overwrite it",
            advice="Remove it or choose another --lock path.",
        ) from None
    if isinstance(doc, dict) and FORMAT_KEY in doc:
        return dict(lock_from_json(doc, path=lock_path).servers)
    if looks_legacy(doc):
        return {}  # migrating from mcp-tool-pin-check: its lock is replaced
    raise LockfileError(
        f"{lock_path} exists and is not a lockfile; refusing to overwrite it",
        advice="Remove it or choose another --lock path.",
    )


@dataclass(frozen=True)
class CheckResult:
    """The outcome of ``check``."""

    drift: Drift
    lock_format: str
    """``"toolpin"`` or ``"mcp-tool-pin-check"``."""
    source: JSONValue
    pinned_at: JSONValue
    entry_name: str | None
    notes: tuple[str, ...] = ()
    fast_path: bool = False
    partial: bool = False
    record_key: str | None = None
    """The key this verified "unchanged" result is remembered under on this machine
    (None when it is not): :mod:`toolpin.offline.remembered` replays output by it."""

    @property
    def ok(self) -> bool:
        """Exit code 0 when True, 1 otherwise."""
        return self.drift.ok


def check(
    listing_paths: Sequence[Path],
    lock_path: Path,
    *,
    entry_name: str | None = None,
    use_cache: bool = True,
    result_cache: bool = True,
) -> CheckResult:
    """Check an export against a lock; never modifies the lock.

    ``use_cache=False`` verifies both files in full and touches no record on this machine
    (``check --no-cache``); ``result_cache=False`` skips only the verified-result record,
    so the listing is always checked in full (the lock's own verification may still be
    remembered, see :mod:`toolpin.lockfile.verified`).

    Both files are always verified in full (the listing parsed strictly and hashed, every
    definition of the lock re-hashed), unless this machine already did exactly that for
    the same bytes and found nothing changed (see :mod:`toolpin.offline.check` docstring).
    """
    raws = tuple(_read(p) for p in listing_paths)
    try:
        lock_data = read_bytes(lock_path)
    except LockfileError:
        load_listing(listing_paths, raws)  # as mcp-tool-pin-check: listing errors come first
        raise
    digest = verified_locks.lock_digest(lock_data) if use_cache else None
    key = None
    if digest is not None and result_cache:
        key = result_key(raws, digest, entry_name)
        cached = _cached_result(key)
        if cached is not None:
            return replace(cached, record_key=key)
    result = _full_check(listing_paths, raws, lock_path, lock_data, entry_name, digest=digest)
    if key is not None and result.ok and _remember(key, result):
        return replace(result, record_key=key)
    return result


def _full_check(
    listing_paths: Sequence[Path],
    raws: Sequence[bytes],
    lock_path: Path,
    lock_data: bytes,
    entry_name: str | None,
    *,
    digest: bytes | None,
) -> CheckResult:
    """``digest`` (SHA-256 of ``lock_data``) is given when the per-user records may be used."""
    listing = load_listing(listing_paths, raws)
    # toolpin writes its format key first; a legacy lock is parsed with Python numbers.
    toolpin_format = b'"toolpinLock"' in lock_data
    summary = None
    if toolpin_format and digest is not None:
        summary = verified_locks.recall(lock_data, digest=digest)
    if summary is not None:
        # These exact bytes passed the strict parse and every hash before (see
        # toolpin.lockfile.verified). When every pinned set hash matches the export's,
        # the lock is not even read; otherwise its recorded hashes explain the drift.
        unchanged = _check_summary(listing, summary, lock_path, entry_name)
        if unchanged is not None:
            return unchanged
        doc = json.loads(lock_data.removeprefix(b"\xef\xbb\xbf"))
        lock = lock_from_json(doc, path=lock_path, trusted=True)
        return _check_toolpin(listing, lock, lock_path, entry_name)
    try:
        doc = parse_json(lock_data, allow_bom=True, numbers="js" if toolpin_format else "python")
    except JSONError as exc:
        raise LockfileError(f"{lock_path} is not valid JSON: {exc.message}") from None
    if isinstance(doc, dict) and FORMAT_KEY in doc:
        if not toolpin_format:  # pragma: no cover - the key is always spelled as above
            doc = parse_json(lock_data, allow_bom=True)
        lock = lock_from_json(doc, path=lock_path)
        if digest is not None:
            verified_locks.remember(
                lock_data, verified_locks.summary_of(lock.servers), digest=digest
            )
        return _check_toolpin(listing, lock, lock_path, entry_name)
    if looks_legacy(doc):
        return _check_legacy(listing, lock_path, doc)
    raise LockfileError(f"{lock_path} is not a tool pin lockfile")


def _check_toolpin(
    listing: Listing, lock: Lockfile, lock_path: Path, entry_name: str | None
) -> CheckResult:
    name, entry = _pick_entry(lock.servers, entry_name, listing.export.snapshot.identity, lock_path)
    return _toolpin_result(compare(entry.snapshot, listing.export.snapshot), entry, name, listing)


def _toolpin_result(
    drift: Drift,
    entry: LockEntry | verified_locks.EntrySummary,
    name: str,
    listing: Listing,
) -> CheckResult:
    notes = [f"not checked: {part}" for part in drift.not_checked]
    return _result(drift, "toolpin", entry, name, notes, listing)


def _result(
    drift: Drift,
    lock_format: str,
    pinned: LockEntry | verified_locks.EntrySummary | LegacyLock,
    entry_name: str | None,
    notes: Sequence[str],
    listing: Listing,
) -> CheckResult:
    """The result of a check against ``pinned`` (the lock entry, or a legacy lock)."""
    return CheckResult(
        drift=drift,
        lock_format=lock_format,
        source=pinned.source,
        pinned_at=pinned.pinned_at,
        entry_name=entry_name,
        notes=tuple(notes),
        partial=listing.export.partial,
    )


def _check_summary(
    listing: Listing,
    summary: verified_locks.LockSummary,
    lock_path: Path,
    entry_name: str | None,
) -> CheckResult | None:
    """The result of :func:`_check_toolpin` when the picked entry's every set hash and
    the instructions hash equal the export's (None: something differs, read the lock).

    Equal set hashes mean the same names with the same definition hashes, so the pinned
    listings are the export's own: the comparison runs on them, with the pinned identity.
    """
    current = listing.export.snapshot
    name, entry = _pick_entry(summary.servers, entry_name, current.identity, lock_path)
    for kind in KINDS:
        observed = current.listing(kind)
        pinned = entry.set_hashes.get(kind)
        if (observed is None) != (pinned is None):
            return None
        if observed is not None and observed.set_hash != pinned:
            return None
    if entry.instructions_known != current.instructions_known:
        return None
    if entry.instructions_known and entry.instructions_hash != current.instructions_hash:
        return None
    pinned_snapshot = replace(current, identity=entry.identity)
    return _toolpin_result(compare(pinned_snapshot, current), entry, name, listing)


def _check_legacy(listing: Listing, lock_path: Path, lock_doc: JSONValue) -> CheckResult:
    lock = read_legacy(lock_doc, lock_path)
    snapshot = listing.export.snapshot
    if snapshot.tools is None:
        raise ListingError(
            "listing has no tools array (expected result.tools, tools, or a bare list)"
        )
    raw_tools: list[JSONValue] = []
    for path, data in zip(listing.paths, listing.raw, strict=True):
        doc = _parse_listing(path, data, numbers="python")
        raw_tools.extend(_raw_tools(doc))
    drift = check_legacy(lock, raw_tools, snapshot.identity)
    notes = [LEGACY_NOTE]
    if any(snapshot.listing(k) is not None for k in (Kind.PROMPT, Kind.RESOURCE, Kind.TEMPLATE)):
        notes.append("not checked: prompts, resources and templates (the lock has none)")
    return _result(drift, "mcp-tool-pin-check", lock, None, notes, listing)


def _raw_tools(doc: JSONValue) -> list[JSONValue]:
    # The same location rules as the snapshot reader, for the tools array only.
    if isinstance(doc, list):
        return list(doc)
    if not isinstance(doc, dict):
        return []
    result = doc.get("result")
    if isinstance(result, dict) and isinstance(result.get("tools"), list):
        return list(result["tools"])
    tools = doc.get("tools")
    return list(tools) if isinstance(tools, list) else []


def _pick_entry(
    servers: Mapping[str, _Entry],
    wanted: str | None,
    identity: Identity | None,
    lock_path: Path,
) -> tuple[str, _Entry]:
    if wanted is not None:
        if wanted not in servers:
            raise LockfileError(f"{lock_path} has no entry named {wanted!r}")
        return wanted, servers[wanted]
    if len(servers) == 1:
        name = next(iter(servers))
        return name, servers[name]
    if DEFAULT_ENTRY in servers:
        return DEFAULT_ENTRY, servers[DEFAULT_ENTRY]
    if identity is not None and identity.name in servers:
        return identity.name, servers[identity.name]
    if not servers:
        raise LockfileError(f"{lock_path} holds no servers")
    raise LockfileError(f"{lock_path} holds {len(servers)} servers; choose one with --server NAME")


# ------------------------------------------------------------------- verified-result cache

_CACHE_FORMAT = CACHE_FORMAT
_CACHE_LIMIT = 256


def _cache_dir() -> Path:
    return Path(cache_dir())


def _cached_result(key: str) -> CheckResult | None:
    """A result this machine verified before for exactly these bytes, or None."""
    try:
        doc = json.loads((_cache_dir() / f"{key}.json").read_bytes())
        return _result_from_json(doc)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _remember(key: str, result: CheckResult) -> bool:
    """Record a verified "unchanged" result (best effort: a read-only home is fine)."""
    directory = _cache_dir()
    try:
        ensure_private_dir(directory)
        data = json.dumps(_result_json(result), sort_keys=True).encode()
        atomic_write(directory / f"{key}.json", data, mode=0o600)
        entries = sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in entries[: max(0, len(entries) - _CACHE_LIMIT)]:
            old.unlink(missing_ok=True)
            for output in directory.glob(f"{old.stem}.*.out"):  # its replayable output
                output.unlink(missing_ok=True)
    except (OSError, StoreError):
        return False
    return True


def _identity_json(identity: Identity | None) -> dict[str, str | None] | None:
    return identity.to_json() if identity is not None else None


def _identity_of(raw: Any) -> Identity | None:
    if raw is None:
        return None
    version = raw["version"]
    return Identity(
        str(raw["name"]), None if version is None else str(version), raw.get("protocolVersion")
    )


def _result_json(result: CheckResult) -> dict[str, Any]:
    drift = result.drift
    return {
        "format": _CACHE_FORMAT,
        "lock_format": result.lock_format,
        "source": result.source,
        "pinned_at": result.pinned_at,
        "entry": result.entry_name,
        "notes": list(result.notes),
        "partial": result.partial,
        "unchanged": {kind.value: list(names) for kind, names in drift.unchanged.items()},
        "compared": [kind.value for kind in drift.compared],
        "not_checked": list(drift.not_checked),
        "pinned": _identity_json(drift.identity.pinned),
        "current": _identity_json(drift.identity.current),
    }


def _result_from_json(doc: Any) -> CheckResult | None:
    if doc.get("format") != _CACHE_FORMAT:
        return None
    drift = Drift(
        changes=(),
        unchanged={Kind(k): tuple(v) for k, v in doc["unchanged"].items()},
        instructions=None,
        identity=IdentityReport(
            pinned=_identity_of(doc["pinned"]), current=_identity_of(doc["current"])
        ),
        not_checked=tuple(doc["not_checked"]),
        compared=tuple(Kind(k) for k in doc["compared"]),
    )
    if not drift.ok:
        return None
    return CheckResult(
        drift=drift,
        lock_format=str(doc["lock_format"]),
        source=doc["source"],
        pinned_at=doc["pinned_at"],
        entry_name=doc["entry"],
        notes=tuple(doc["notes"]),
        fast_path=True,
        partial=bool(doc["partial"]),
    )
