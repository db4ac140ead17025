"""The files of a local folder, named by their path relative to it (``a/b/c``)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Final

from toolpin.errors import StoreError

_REL_SEGMENT: Final = re.compile(r"[A-Za-z0-9._=+-]{1,255}")


def safe_rel(rel: str) -> bool:
    """Whether ``rel`` is a plain relative path: no ``..``, no empty or odd segment."""
    parts = rel.split("/")
    return all(_REL_SEGMENT.fullmatch(p) and p not in (".", "..") for p in parts)


def folder_files(root: Path, *, skip: frozenset[str] = frozenset()) -> dict[str, Path]:
    """Every regular file under ``root`` (symbolic links and special files are refused)."""
    out: dict[str, Path] = {}
    if not root.is_dir():
        return out
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = Path(directory, name)
            rel = path.relative_to(root).as_posix()
            if rel in skip or name in skip:
                continue
            mode = os.lstat(path).st_mode
            if not stat.S_ISREG(mode):
                raise StoreError(f"{path} is not a regular file; refusing to publish it")
            if not safe_rel(rel):
                raise StoreError(f"{path} has a name that cannot be an object name")
            out[rel] = path
    return out


__all__ = ["folder_files", "safe_rel"]
