"""A local folder mirrored from a bucket prefix (:func:`pull`) or published to one (:func:`push`).

:func:`push` uploads only objects whose bytes differ from the bucket's (compared by the
ETag, which is the MD5 of a single-part upload, or else by the ``sha256`` metadata), in
three waves, each finished before the next starts: immutable objects (full tiles, blobs:
``Cache-Control: public, max-age=31536000, immutable``), then every other file but the
checkpoint (``no-cache`` unless the site's ``_headers`` says otherwise), then the
checkpoint — so the bucket never holds a checkpoint whose tiles and blobs are missing, and
an interrupted push leaves the published log valid at its previous checkpoint. The
checkpoint is replaced by a conditional write on the ETag it had when the writer read it,
so a writer that did not start from the bucket's current checkpoint is refused. Objects the
folder no longer has are deleted last.

:func:`pull` reads the checkpoint first, then lists and downloads what differs (bounded,
names checked), so everything the checkpoint covers is there. Nothing pulled is trusted:
the log engine verifies the tiles against the signed checkpoint before any use.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from toolpin.errors import LogError, StoreError
from toolpin.storage.folder import folder_files, safe_rel
from toolpin.storage.lock import LOCK_OBJECT
from toolpin.storage.s3 import Bucket, ObjectInfo, PreconditionFailed, md5_etag
from toolpin.util.fs import atomic_write

IMMUTABLE: Final = "public, max-age=31536000, immutable"
NO_CACHE: Final = "no-cache"
CHECKPOINT: Final = "checkpoint"
WORKERS: Final = 8
_MD5: Final = re.compile(r"[0-9a-f]{32}")
_SKIP: Final = frozenset({LOCK_OBJECT})

Select = Callable[[str], bool]
CacheControl = Callable[[str], str]


def everything(rel: str) -> bool:
    return True


def log_cache_control(rel: str) -> str:
    """Full tiles and blobs never change once written; the checkpoint and partial tiles
    (one left by an interrupted append may be replaced) are revalidated."""
    if rel.startswith("blob/sha256/") or (rel.startswith("tile/") and ".p/" not in rel):
        return IMMUTABLE
    return NO_CACHE


def headers_cache_control(text: str, fallback: CacheControl = log_cache_control) -> CacheControl:
    """The ``Cache-Control`` a ``_headers`` manifest (Netlify syntax) gives each path;
    partial tiles always revalidate, paths it does not name fall back to ``fallback``."""
    rules: list[tuple[str, str]] = []
    pattern: str | None = None
    for line in text.splitlines():
        if line.startswith("/"):
            pattern = line.strip()
        elif pattern is not None and line.strip().lower().startswith("cache-control:"):
            rules.append((pattern, line.split(":", 1)[1].strip()))

    def choose(rel: str) -> str:
        if ".p/" in rel and rel.startswith("tile/"):
            return NO_CACHE
        path = "/" + rel
        for pat, value in rules:
            if (pat.endswith("*") and path.startswith(pat[:-1])) or path == pat:
                return value
        return fallback(rel)

    return choose


@dataclass(frozen=True)
class SyncResult:
    """Counts of one pull or push (``bytes`` moved over the network)."""

    transferred: int
    unchanged: int
    removed: int
    bytes: int


def _same(bucket: Bucket, rel: str, data: bytes, info: ObjectInfo | None) -> bool:
    if info is None:
        return False
    if _MD5.fullmatch(info.etag):
        return md5_etag(data) == info.etag
    head = bucket.head(rel)  # a multipart or encrypted upload: its ETag is not an MD5
    return head is not None and head.sha256 == hashlib.sha256(data).hexdigest()


def _parallel(jobs: Iterable[Callable[[], int]]) -> int:
    work = list(jobs)
    if not work:
        return 0
    with ThreadPoolExecutor(max_workers=min(WORKERS, len(work))) as pool:
        return sum(pool.map(lambda job: job(), work))


def push(
    root: Path,
    bucket: Bucket,
    *,
    select: Select = everything,
    cache_control: CacheControl = log_cache_control,
    conditional: bool = False,
    expect_checkpoint: str | None = None,
    before_checkpoint: Callable[[], None] | None = None,
    delete_absent: bool = True,
) -> SyncResult:
    """Publish ``root`` to ``bucket`` (see the module doc).

    ``conditional``: replace the checkpoint only if its ETag is still ``expect_checkpoint``
    (the one this writer read; ``None``: only if there is none), else refuse (a log
    writer); without, replace it unconditionally (a site build).
    ``before_checkpoint`` runs just before the checkpoint is written (a lock check)."""
    files = folder_files(root, skip=_SKIP | {".toolpin.lock"})
    local = {r: p for r, p in files.items() if select(r)}
    remote = {r: i for r, i in bucket.list().items() if select(r) and r != LOCK_OBJECT}
    waves: tuple[list[tuple[str, bytes]], list[tuple[str, bytes]]] = ([], [])
    checkpoint: bytes | None = None
    unchanged = 0
    for rel, path in local.items():
        data = path.read_bytes()
        if _same(bucket, rel, data, remote.get(rel)):
            unchanged += 1
        elif rel == CHECKPOINT:
            checkpoint = data
        else:
            waves[0 if cache_control(rel) == IMMUTABLE else 1].append((rel, data))

    def upload(rel: str, data: bytes) -> Callable[[], int]:
        def job() -> int:
            bucket.put(rel, data, cache_control=cache_control(rel))
            return len(data)

        return job

    moved = 0
    for wave in waves:
        moved += _parallel(upload(rel, data) for rel, data in sorted(wave))
    if checkpoint is not None:
        if before_checkpoint is not None:
            before_checkpoint()
        try:
            if not conditional:
                bucket.put(CHECKPOINT, checkpoint, cache_control=cache_control(CHECKPOINT))
            elif expect_checkpoint is None:
                bucket.put(CHECKPOINT, checkpoint, cache_control=NO_CACHE, if_none_match=True)
            else:
                bucket.put(
                    CHECKPOINT, checkpoint, cache_control=NO_CACHE, if_match=expect_checkpoint
                )
        except PreconditionFailed:
            raise LogError(
                f"the checkpoint in {bucket.url} changed since this writer read it; "
                "refusing to replace it",
                advice="Another writer published meanwhile: run the command again.",
            ) from None
        moved += len(checkpoint)
    gone = sorted(set(remote) - set(local)) if delete_absent else []

    def remove(rel: str) -> Callable[[], int]:
        def job() -> int:
            bucket.delete(rel)
            return 1

        return job

    removed = _parallel(remove(rel) for rel in gone)
    uploads = len(waves[0]) + len(waves[1]) + (checkpoint is not None)
    return SyncResult(uploads, unchanged, removed, moved)


def pull(
    bucket: Bucket,
    root: Path,
    *,
    select: Select,
    cap: Callable[[str], int],
) -> tuple[SyncResult, str | None]:
    """Make ``root`` hold exactly the selected objects of ``bucket``; returns the counts
    and the ETag of the checkpoint read (``None`` when the bucket has none)."""
    checkpoint = bucket.get(CHECKPOINT, cap(CHECKPOINT)) if select(CHECKPOINT) else None
    remote = {
        r: i for r, i in bucket.list().items() if r not in (CHECKPOINT, LOCK_OBJECT) and select(r)
    }
    for rel in remote:
        if not safe_rel(rel):
            raise StoreError(f"{bucket.url} holds an object whose name cannot be a file")
    local = {
        r: p
        for r, p in folder_files(root, skip=_SKIP | {".toolpin.lock"}).items()
        if select(r) and r != CHECKPOINT
    }
    todo = []
    unchanged = 0
    for rel, info in remote.items():
        path = local.get(rel)
        same = path is not None and md5_etag(path.read_bytes()) == info.etag
        if same and _MD5.fullmatch(info.etag):
            unchanged += 1
        else:
            todo.append(rel)

    def download(rel: str) -> Callable[[], int]:
        def job() -> int:
            data = bucket.get(rel, cap(rel))
            if data is None:  # deleted since the listing: not covered by the checkpoint read
                return 0
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, data, sync=False)
            return len(data)

        return job

    moved = _parallel(download(rel) for rel in sorted(todo))
    removed = 0
    for rel in sorted(set(local) - set(remote)):
        local[rel].unlink(missing_ok=True)
        removed += 1
    target = root / CHECKPOINT
    if checkpoint is None:
        if target.exists():
            target.unlink()
            removed += 1
        etag = None
    else:
        root.mkdir(parents=True, exist_ok=True)
        atomic_write(target, checkpoint)
        moved += len(checkpoint)
        etag = md5_etag(checkpoint)
    return SyncResult(len(todo) + (checkpoint is not None), unchanged, removed, moved), etag


__all__ = [
    "IMMUTABLE",
    "NO_CACHE",
    "SyncResult",
    "everything",
    "headers_cache_control",
    "log_cache_control",
    "pull",
    "push",
]
