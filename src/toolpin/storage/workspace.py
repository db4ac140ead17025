"""A log opened where it lives: a folder as it is, a bucket prefix through a local copy.

A bucket's log is read through a mirror (``toolpin_cache()/s3/<bucket>/<prefix id>/``,
refreshed by :func:`~toolpin.storage.sync.pull`, only the log's own files) and every
command works on that folder exactly as on any other: what the engine verifies is the
bytes the bucket served. A writer (:func:`writable_log`) holds the bucket's lock object for
its whole run, works on its own copy, and publishes with
:func:`~toolpin.storage.sync.push`: tiles and blobs first, the checkpoint last and only if
it is still the one the writer started from and the lock is still the writer's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from toolpin.errors import LogError
from toolpin.storage.layout import is_log_file, log_file_cap
from toolpin.storage.lock import DEFAULT_TTL, BucketLock
from toolpin.storage.s3 import Bucket, md5_etag
from toolpin.storage.sync import SyncResult, pull, push
from toolpin.storage.url import S3Location, is_bucket_url, parse_bucket_url
from toolpin.util.fs import locked, toolpin_cache


def local_copy(location: S3Location, kind: str) -> Path:
    """Where the local copy of ``location`` of ``kind`` (``mirror``, ``writer``, ``site``)
    is kept between runs."""
    digest = hashlib.sha256(location.prefix.encode("utf-8")).hexdigest()[:16]
    return toolpin_cache() / "s3" / location.bucket / digest / kind


def _lock_path(path: Path) -> Path:
    return path.parent / f".{path.name}.lock"


@contextmanager
def readable_log(where: str) -> Iterator[Path]:
    """The log at ``where`` (a folder, or ``s3://...`` refreshed into its mirror)."""
    if not is_bucket_url(where):
        yield Path(where)
        return
    location = parse_bucket_url(where)
    mirror = local_copy(location, "mirror")
    mirror.mkdir(parents=True, exist_ok=True)
    with locked(_lock_path(mirror), timeout=600.0):
        pull(Bucket(location), mirror, select=is_log_file, cap=log_file_cap)
        yield mirror


@dataclass
class WritableLog:
    """A log to append to: ``path`` is a folder; ``publish`` sends it to where it lives
    (nothing for a folder log)."""

    path: Path
    bucket: Bucket | None = None
    lock: BucketLock | None = None
    checkpoint_etag: str | None = None
    published: list[SyncResult] = field(default_factory=list)

    def publish(self) -> None:
        if self.bucket is None:
            return
        lock = self.lock

        def still_ours() -> None:
            if lock is not None and not lock.still_held():
                raise LogError(
                    f"the lock of {self.bucket.url if self.bucket else ''} is no longer this "
                    "writer's; refusing to publish the checkpoint"
                )

        result = push(
            self.path,
            self.bucket,
            select=is_log_file,
            conditional=True,
            expect_checkpoint=self.checkpoint_etag,
            before_checkpoint=still_ours,
        )
        checkpoint = self.path / "checkpoint"
        if checkpoint.is_file():
            self.checkpoint_etag = md5_etag(checkpoint.read_bytes())
        self.published.append(result)


@contextmanager
def writable_log(where: str, *, lock_ttl: float = DEFAULT_TTL) -> Iterator[WritableLog]:
    """The log at ``where`` opened for one writer (see the module doc)."""
    if not is_bucket_url(where):
        yield WritableLog(Path(where))
        return
    location = parse_bucket_url(where)
    bucket = Bucket(location)
    copy = local_copy(location, "writer")
    copy.mkdir(parents=True, exist_ok=True)
    with BucketLock(bucket, ttl=lock_ttl) as lock, locked(_lock_path(copy), timeout=10.0):
        _, etag = pull(bucket, copy, select=is_log_file, cap=log_file_cap)
        yield WritableLog(copy, bucket, lock, etag)


__all__ = [
    "WritableLog",
    "local_copy",
    "readable_log",
    "writable_log",
]
