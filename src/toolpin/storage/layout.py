"""Which objects of a prefix are a tiled log's, and the largest size each may have."""

from __future__ import annotations

from typing import Final

from toolpin.publog.tiles import max_file_bytes

MAX_BLOB_BYTES: Final = 64 << 20
MAX_OPTOUT_BYTES: Final = 1 << 20
OPTOUT: Final = "OPTOUT.txt"


def is_log_file(rel: str) -> bool:
    """The files of a tiled log (a site in the same prefix is left alone)."""
    return rel in ("checkpoint", OPTOUT) or rel.startswith(("tile/", "blob/sha256/"))


def log_file_cap(rel: str) -> int:
    if rel.startswith("blob/"):
        return MAX_BLOB_BYTES
    if rel == OPTOUT:
        return MAX_OPTOUT_BYTES
    return max_file_bytes(rel)


__all__ = ["MAX_BLOB_BYTES", "OPTOUT", "is_log_file", "log_file_cap"]
