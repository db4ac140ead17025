"""Content-addressed blobs beside the log: ``<log dir>/blob/sha256/<hex>``.

A blob is written once (atomically) and never rewritten; reading checks its digest. Log
entries refer to blobs as ``"sha256:<hex>"`` (see :mod:`toolpin.publog.entries`).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from toolpin.errors import LogError
from toolpin.publog.entries import BLOB_REF
from toolpin.util.fs import atomic_write

__all__ = ["BlobError", "BlobStore", "blob_ref"]


class BlobError(LogError):
    """A blob that is missing, malformed or does not match its digest."""


def blob_ref(data: bytes) -> str:
    """``"sha256:<hex>"`` of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


class BlobStore:
    """Write-once, verified-on-read blob store in a log directory."""

    def __init__(self, log_dir: str | Path) -> None:
        self.root = Path(log_dir)
        self._folder = self.root / "blob" / "sha256"
        self._prefix = os.path.join(self._folder, "")

    def path(self, ref: str) -> Path:
        return Path(self.file(ref))

    def file(self, ref: str) -> str:
        """The blob's path, as a string."""
        if not BLOB_REF.fullmatch(ref):
            raise BlobError('a blob reference is "sha256:<64 lower-case hex>"')
        return self._prefix + ref[7:]

    def put(self, data: bytes) -> str:
        """Store ``data`` (if not already there) and return its reference."""
        ref = blob_ref(data)
        target = self.path(ref)
        if target.exists():
            if hashlib.sha256(target.read_bytes()).digest() != hashlib.sha256(data).digest():
                raise BlobError(
                    f"blob {ref} exists but its content does not match its digest",
                    advice="The log directory is damaged; restore the blob from a copy.",
                )
            return ref
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, data)
        return ref

    def has(self, ref: str) -> bool:
        return self.path(ref).is_file()

    def check(self, ref: str) -> None:
        """Check that blob ``ref`` exists and matches its digest (streamed, any size)."""
        target = self.file(ref)
        digest = hashlib.sha256()
        try:
            with open(target, "rb", buffering=0) as handle:  # an audit reads 100,000
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
        except FileNotFoundError:
            raise BlobError(f"blob {ref} is missing") from None
        except OSError as exc:
            raise BlobError(f"blob {ref} cannot be read ({exc.strerror})") from None
        if "sha256:" + digest.hexdigest() != ref:
            raise BlobError(f"blob {ref} does not match its digest")

    def get(self, ref: str) -> bytes:
        """The blob's bytes, checked against its digest."""
        try:
            # a str path and an unbuffered file: a site build reads 100,000 small blobs
            with open(self.file(ref), "rb", buffering=0) as handle:
                data = handle.readall()
        except FileNotFoundError:
            raise BlobError(f"blob {ref} is missing") from None
        except OSError as exc:
            raise BlobError(f"blob {ref} cannot be read ({exc.strerror})") from None
        if blob_ref(data) != ref:
            raise BlobError(f"blob {ref} does not match its digest")
        return data
