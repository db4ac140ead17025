"""A verified log folder, and a built site, published to a bucket prefix.

:func:`publish_log` sends a folder only if it verifies against the pinned key and is
consistent with the checkpoint the bucket already has (so a publish can never roll the
bucket's log back or fork it), under the bucket's writer lock, with the checkpoint replaced
by a conditional write. :func:`publish_site` sends a site folder with the
``Cache-Control`` its ``_headers`` gives each path, checkpoint last, removed pages deleted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolpin.publog.note import Verifier
from toolpin.storage.layout import is_log_file, log_file_cap
from toolpin.storage.lock import BucketLock
from toolpin.storage.s3 import Bucket
from toolpin.storage.sync import SyncResult, headers_cache_control, log_cache_control, push
from toolpin.storage.url import is_bucket_url, parse_bucket_url
from toolpin.storage.workspace import _lock_path, local_copy
from toolpin.util.fs import locked


@dataclass(frozen=True)
class Published:
    """What one publish did (``reason`` is one line, safe to print)."""

    ok: bool
    reason: str
    url: str
    sync: SyncResult | None = None

    def to_json(self) -> dict[str, Any]:
        sync = self.sync
        return {
            "ok": self.ok,
            "reason": self.reason,
            "url": self.url,
            "uploaded": sync.transferred if sync else 0,
            "unchanged": sync.unchanged if sync else 0,
            "removed": sync.removed if sync else 0,
            "bytes": sync.bytes if sync else 0,
        }

    def summary_line(self) -> str:
        if not self.ok:
            return f"FAILED: {self.reason}"
        sync = self.sync
        assert sync is not None
        return (
            f"published to {self.url}: {sync.transferred} uploaded, {sync.unchanged} "
            f"unchanged, {sync.removed} removed ({sync.bytes:,} bytes)"
        )


def publish_log(log_dir: Path, verifier: Verifier, dest: str) -> Published:
    from toolpin.publog.verify import verify_log
    from toolpin.storage.s3 import md5_etag

    location = parse_bucket_url(dest)
    bucket = Bucket(location)
    with BucketLock(bucket) as lock:
        remote = bucket.get("checkpoint", log_file_cap("checkpoint"))
        since = None
        if remote is not None:
            try:
                since = remote.decode("utf-8")
            except UnicodeDecodeError:
                return Published(False, "the bucket's checkpoint is not text", location.url)
        result = verify_log(log_dir, verifier, since)
        if not result.ok:
            if result.exit_code == 2:
                from toolpin.errors import LogError

                raise LogError(result.reason)
            return Published(False, result.reason, location.url)

        def still_ours() -> None:
            if not lock.still_held():
                from toolpin.errors import LogError

                raise LogError(f"the lock of {location.url} is no longer this writer's")

        sync = push(
            log_dir,
            bucket,
            select=is_log_file,
            cache_control=log_cache_control,
            conditional=True,
            expect_checkpoint=md5_etag(remote) if remote is not None else None,
            before_checkpoint=still_ours,
        )
    return Published(True, result.reason, location.url, sync)


def publish_site(site_dir: Path, dest: str) -> Published:
    location = parse_bucket_url(dest)
    bucket = Bucket(location)
    headers = site_dir / "_headers"
    rules = (
        headers_cache_control(headers.read_text("utf-8"))
        if headers.is_file()
        else log_cache_control
    )
    with BucketLock(bucket):
        sync = push(site_dir, bucket, cache_control=rules)
    return Published(True, "the site was published", location.url, sync)


def _nothing() -> None:
    return None


@contextmanager
def site_folder(where: str) -> Iterator[tuple[Path, Callable[[], None]]]:
    """Where to build a site for ``where`` and how to publish it there: a folder is built
    in place; a bucket prefix is built in its local copy (kept between builds, so a build
    stays incremental) and sent by :func:`~toolpin.storage.publish.publish_site`."""
    if not is_bucket_url(where):
        yield Path(where), _nothing
        return
    location = parse_bucket_url(where)
    copy = local_copy(location, "site")
    copy.parent.mkdir(parents=True, exist_ok=True)
    with locked(_lock_path(copy), timeout=600.0):

        def publish() -> None:
            publish_site(copy, location.url)

        yield copy, publish


__all__ = ["Published", "publish_log", "publish_site", "site_folder"]
