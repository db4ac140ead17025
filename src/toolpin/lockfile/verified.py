"""A per-user record of the exact lock bytes this toolpin has verified in full.

Verifying a lock means parsing it strictly and re-hashing every definition against the
hash recorded beside it (:func:`toolpin.lockfile.native.lock_from_json`): for a
1,000-tool lock that is most of a ``toolpin check``. After it succeeds, the SHA-256 of
the exact bytes (with toolpin's version and the record format) is remembered as an
empty file in ``$TOOLPIN_HOME/cache/verified-locks``; a later check of the same bytes
reads the lock with the C parser and takes its recorded hashes without re-hashing.

Why this is sound:

* The key is the digest of every byte of the lock, so a lock that differs in any byte
  (an edited definition, hash or name) is verified in full again. Only a SHA-256
  collision could reuse a record.
* The record says nothing but "these bytes passed"; it cannot carry a verdict, hashes or
  names, so a record can only ever stand for a verification that really happened.
* It lives in a directory made 0700 and is used only when that directory belongs to
  the current user and no one else can write to it; whoever can write there can
  already rewrite toolpin's own pin store, so the record adds no new way in.
* The version is part of the key: a toolpin with other verification rules starts over.

Any fault (no home, a read-only disk, a foreign directory) means "not known": the full
verification runs. ``toolpin check --no-cache`` never reads or writes it.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Final

from toolpin.errors import StoreError
from toolpin.util.fs import atomic_write, ensure_private_dir, toolpin_home

_FORMAT: Final = 1
_LIMIT: Final = 512
"""Records kept; the oldest are removed past this."""


def _directory() -> Path:
    return toolpin_home() / "cache" / "verified-locks"


def _key(data: bytes) -> str:
    from toolpin import __version__

    digest = hashlib.sha256(f"toolpin-verified-lock {_FORMAT} {__version__}\n".encode())
    digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()


def _private(directory: Path) -> bool:
    """The directory is this user's and nobody else can write to it (POSIX)."""
    if os.name != "posix":  # pragma: no cover - per-user profile directories elsewhere
        return directory.is_dir()
    try:
        info = os.stat(directory)
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.getuid()
        and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def known(data: bytes) -> bool:
    """Whether this user's toolpin already verified exactly these bytes in full."""
    try:
        directory = _directory()
        return _private(directory) and (directory / _key(data)).is_file()
    except (OSError, StoreError):
        return False


def remember(data: bytes) -> None:
    """Record that ``data`` passed full verification (best effort; never raises)."""
    try:
        directory = ensure_private_dir(_directory())
        record = directory / _key(data)
        if not _private(directory) or record.exists():
            return
        atomic_write(record, b"", mode=0o600)
        records = list(directory.iterdir())
        if len(records) > _LIMIT:
            records.sort(key=lambda p: p.stat().st_mtime)
            for old in records[: len(records) - _LIMIT]:
                old.unlink(missing_ok=True)
    except (OSError, StoreError):
        return
