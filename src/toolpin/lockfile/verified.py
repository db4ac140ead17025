"""A per-user record of the exact lock bytes this toolpin has verified in full.

Verifying a lock means parsing it strictly and re-hashing every definition against the
hash recorded beside it (:func:`toolpin.lockfile.native.lock_from_json`): for a
1,000-tool lock that is most of a ``toolpin check``. After it succeeds, a record named by
the SHA-256 of the exact bytes (with toolpin's version and the record format) is written
to ``$TOOLPIN_HOME/cache/verified-locks``. It holds the lock's *summary*: per server
entry its name, source, pinnedAt, pinned identity, the set hash of every pinned listing
and the instructions hash, all read from the lock that was just verified. A later check
of the same bytes compares the export's freshly computed set hashes with the summary and,
when every one matches, never parses the lock at all; on any difference it reads the
lock (taking its recorded hashes, which were verified) to explain the drift.

Why this is sound:

* The key is the digest of every byte of the lock, so a lock that differs in any byte
  (an edited definition, hash or name) is verified in full again. Only a SHA-256
  collision could reuse a record.
* A record is written only right after the full verification of those bytes succeeded,
  and holds nothing but values read from them: it can only ever stand for a verification
  that really happened. The verdict is never stored: it is recomputed from the export,
  which is always parsed and hashed in full, against the pinned set hashes (equal set
  hashes mean the same names with the same definition hashes, which is exactly what the
  full comparison decides on).
* It lives in a directory made 0700 and is used only when that directory belongs to
  the current user and no one else can write to it; whoever can write there can
  already rewrite toolpin's own pin store, so the record adds no new way in. A record
  that is not a regular file or does not read back as a well-formed summary is ignored.
* The version is part of the key: a toolpin with other verification rules starts over.

Any fault (no home, a read-only disk, a foreign directory) means "not known": the full
verification runs. ``toolpin check --no-cache`` never reads or writes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from toolpin.core.snapshot import KINDS, Identity, Kind
from toolpin.errors import StoreError
from toolpin.util.fs import atomic_write, ensure_private_dir, toolpin_home
from toolpin.util.private import private_dir

if TYPE_CHECKING:
    from toolpin.lockfile.native import LockEntry

_FORMAT: Final = 2
_LIMIT: Final = 512
"""Records kept; the oldest are removed past this."""
_MAX_RECORD: Final = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class EntrySummary:
    """What a verified lock entry pins, without its definitions."""

    source: str | None
    pinned_at: str | None
    identity: Identity | None
    set_hashes: Mapping[Kind, str]
    """The set hash of every pinned listing (a kind that is absent was not pinned)."""
    instructions_known: bool
    instructions_hash: str | None


@dataclass(frozen=True, slots=True)
class LockSummary:
    """Every entry of a verified lock, by server name (the lock's own order)."""

    servers: Mapping[str, EntrySummary]


def summary_of(servers: Mapping[str, LockEntry]) -> LockSummary:
    """The summary of a lock's verified entries."""
    out = {}
    for name, entry in servers.items():
        snap = entry.snapshot
        out[name] = EntrySummary(
            source=entry.source,
            pinned_at=entry.pinned_at,
            identity=snap.identity,
            set_hashes={listing.kind: listing.set_hash for listing in snap.listings()},
            instructions_known=snap.instructions_known,
            instructions_hash=snap.instructions_hash,
        )
    return LockSummary(servers=out)


def lock_digest(data: bytes) -> bytes:
    """SHA-256 of the exact lock bytes (what a record is keyed by)."""
    return hashlib.sha256(data).digest()


def _directory() -> Path:
    return toolpin_home() / "cache" / "verified-locks"


def _key(digest: bytes) -> str:
    from toolpin import __version__

    key = hashlib.sha256(f"toolpin-verified-lock {_FORMAT} {__version__}\n".encode())
    key.update(digest)
    return key.hexdigest()


def _read_record(path: Path) -> bytes | None:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_RECORD:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(_MAX_RECORD + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def recall(data: bytes, *, digest: bytes | None = None) -> LockSummary | None:
    """The summary recorded when exactly these bytes were verified in full, or None."""
    try:
        directory = _directory()
        if not private_dir(directory):
            return None
        raw = _read_record(directory / _key(digest or lock_digest(data)))
    except (OSError, StoreError):
        return None
    if raw is None:
        return None
    try:
        return _summary_from_json(json.loads(raw))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def known(data: bytes) -> bool:
    """Whether this user's toolpin already verified exactly these bytes in full."""
    return recall(data) is not None


def remember(data: bytes, summary: LockSummary, *, digest: bytes | None = None) -> None:
    """Record that ``data`` passed full verification (best effort; never raises)."""
    try:
        directory = ensure_private_dir(_directory())
        record = directory / _key(digest or lock_digest(data))
        if not private_dir(directory):
            return  # (an existing record is replaced: it was not a readable summary)
        body = json.dumps(_summary_json(summary), ensure_ascii=True, sort_keys=True)
        atomic_write(record, body.encode("ascii"), mode=0o600)
        records = list(directory.iterdir())
        if len(records) > _LIMIT:
            records.sort(key=lambda p: p.stat().st_mtime)
            for old in records[: len(records) - _LIMIT]:
                old.unlink(missing_ok=True)
    except (OSError, StoreError, ValueError):
        return


# ------------------------------------------------------------------------- record format


def _summary_json(summary: LockSummary) -> dict[str, Any]:
    servers = []
    for name, entry in summary.servers.items():
        identity = entry.identity
        servers.append(
            {
                "name": name,
                "source": entry.source,
                "pinnedAt": entry.pinned_at,
                "server": None if identity is None else identity.to_json(),
                "setHashes": {kind.value: entry.set_hashes[kind] for kind in entry.set_hashes},
                "instructionsKnown": entry.instructions_known,
                "instructionsHash": entry.instructions_hash,
            }
        )
    return {"format": _FORMAT, "servers": servers}


def _text(value: Any) -> str | None:
    if value is None or type(value) is str:
        return value
    raise TypeError("not a string")


def _summary_from_json(doc: Any) -> LockSummary | None:
    if type(doc) is not dict or doc.get("format") != _FORMAT:
        return None
    servers: dict[str, EntrySummary] = {}
    for raw in doc["servers"]:
        name = raw["name"]
        if type(name) is not str or name in servers:
            return None
        identity = None
        if raw["server"] is not None:
            ident = raw["server"]
            version = _text(ident.get("protocolVersion"))
            shown = ident["version"]
            identity = Identity(str(ident["name"]), None if shown is None else str(shown), version)
        set_hashes = {}
        for kind in KINDS:
            value = raw["setHashes"].get(kind.value)
            if value is not None:
                set_hashes[kind] = str(value)
        known = raw["instructionsKnown"]
        if type(known) is not bool:
            return None
        servers[name] = EntrySummary(
            source=_text(raw["source"]),
            pinned_at=_text(raw["pinnedAt"]),
            identity=identity,
            set_hashes=set_hashes,
            instructions_known=known,
            instructions_hash=_text(raw["instructionsHash"]),
        )
    return LockSummary(servers=servers)
