"""One writer per bucket prefix: a lock object created with ``If-None-Match: *``.

The lock object (``.toolpin.lock`` under the prefix) holds a random token, the host and
process that took it and when it expires. Creating it is conditional, so of two writers
exactly one succeeds; the other is refused at once. A lock past its expiry (its writer was
killed) is taken over by a conditional replace on its ETag, so two late-comers cannot both
take it. It is released by a delete conditional on the ETag its holder wrote.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
from datetime import UTC, datetime, timedelta
from typing import Final

from toolpin.errors import LogError
from toolpin.storage.s3 import Bucket, PreconditionFailed

LOCK_OBJECT: Final = ".toolpin.lock"
DEFAULT_TTL: Final = 6 * 3600.0
_MAX_LOCK_BYTES: Final = 4096


class BucketLock:
    """Held between :meth:`acquire` and :meth:`release` (or as a context manager)."""

    def __init__(self, bucket: Bucket, *, ttl: float = DEFAULT_TTL) -> None:
        self.bucket = bucket
        self.ttl = ttl
        self.etag: str | None = None

    def _body(self) -> bytes:
        expires = datetime.now(UTC) + timedelta(seconds=self.ttl)
        return json.dumps(
            {
                "token": secrets.token_hex(16),
                "host": socket.gethostname()[:64],
                "pid": os.getpid(),
                "expires": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
            sort_keys=True,
        ).encode("ascii")

    def acquire(self) -> None:
        try:
            self.etag = self.bucket.put(
                LOCK_OBJECT, self._body(), cache_control="no-store", if_none_match=True
            )
            return
        except PreconditionFailed:
            pass
        current = self.bucket.head(LOCK_OBJECT)
        if current is not None and self._expired():
            try:
                self.etag = self.bucket.put(
                    LOCK_OBJECT, self._body(), cache_control="no-store", if_match=current.etag
                )
                return
            except PreconditionFailed:
                pass
        raise LogError(
            f"another writer holds the lock of {self.bucket.url}",
            advice=(
                "Wait for it to finish (one writer at a time); a lock whose writer was "
                f"killed expires {self.ttl / 3600:g} h after it was taken."
            ),
        )

    def _expired(self) -> bool:
        raw = self.bucket.get(LOCK_OBJECT, _MAX_LOCK_BYTES)
        if raw is None:
            return True
        try:
            doc = json.loads(raw)
            expires = datetime.strptime(str(doc["expires"]), "%Y-%m-%dT%H:%M:%SZ")
        except (ValueError, KeyError, TypeError):
            return False  # unreadable: never assume it is free
        return expires.replace(tzinfo=UTC) < datetime.now(UTC)

    def still_held(self) -> bool:
        current = self.bucket.head(LOCK_OBJECT)
        return current is not None and current.etag == self.etag

    def release(self) -> None:
        if self.etag is None:
            return
        with contextlib.suppress(PreconditionFailed):  # taken over after it expired
            self.bucket.delete(LOCK_OBJECT, if_match=self.etag)
        self.etag = None

    def __enter__(self) -> BucketLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


__all__ = ["DEFAULT_TTL", "LOCK_OBJECT", "BucketLock"]
