"""Whether a directory is fit to hold records toolpin trusts: this user's, and nobody
else can write to it. Standard library ``os`` and ``stat`` only: the replayed ``check``
imports it at start."""

from __future__ import annotations

import os
import stat


def private_dir(directory: str | os.PathLike[str]) -> bool:
    """The directory is this user's and nobody else can write to it (POSIX; elsewhere,
    per-user profile directories: that it is a directory)."""
    if os.name != "posix":  # pragma: no cover - per-user profile directories elsewhere
        return os.path.isdir(directory)
    try:
        info = os.stat(directory)
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.getuid()
        and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )
