"""``s3://bucket/prefix``: a bucket and a key prefix, checked before any request."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from toolpin.errors import InputError

SCHEME: Final = "s3://"
_BUCKET: Final = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_SEGMENT: Final = re.compile(r"[A-Za-z0-9._=+-]{1,200}")


@dataclass(frozen=True)
class S3Location:
    """A bucket and a prefix (``""`` or ``a/b/`` — always ending in ``/`` when set)."""

    bucket: str
    prefix: str

    @property
    def url(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.prefix}"

    def key(self, rel: str) -> str:
        return self.prefix + rel

    def child(self, rel: str) -> S3Location:
        """The location ``rel`` (a folder name) under this one."""
        return parse_bucket_url(f"{self.url}{rel}")


def is_bucket_url(text: str) -> bool:
    return text.startswith(SCHEME)


def parse_bucket_url(text: str) -> S3Location:
    """Parse ``s3://bucket[/prefix]``; refuses (exit 2) anything else, with a fixed reason."""
    if not is_bucket_url(text):
        raise InputError("a bucket URL is s3://bucket/prefix")
    rest = text[len(SCHEME) :]
    bucket, _, prefix = rest.partition("/")
    if not _BUCKET.fullmatch(bucket) or ".." in bucket:
        raise InputError("the bucket name in the s3:// URL is not a valid S3 bucket name")
    segments = [s for s in prefix.split("/") if s]
    if any(not _SEGMENT.fullmatch(s) or s in (".", "..") for s in segments):
        raise InputError(
            "the prefix of the s3:// URL may hold only letters, digits and . _ = + - between /"
        )
    return S3Location(bucket, "".join(f"{s}/" for s in segments))


__all__ = ["SCHEME", "S3Location", "is_bucket_url", "parse_bucket_url"]
