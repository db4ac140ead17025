"""One prefix of an S3-compatible bucket, through boto3.

Credentials, region, profile and endpoint come from where every AWS tool reads them
(``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``AWS_PROFILE``, ``~/.aws/config`` and
``credentials``, ``AWS_ENDPOINT_URL`` or ``endpoint_url`` in the profile for a non-AWS
server); the region defaults to ``us-east-1`` when none is set. Every object toolpin
writes carries its SHA-256 as metadata (``x-amz-meta-sha256``) and a ``Cache-Control``.

Reads are bounded (a caller names the largest size an object of its kind may have);
errors are :class:`~toolpin.errors.StoreError` with fixed text and the HTTP status only:
no text the server sent is ever repeated.
"""

from __future__ import annotations

import hashlib
import mimetypes
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from toolpin.errors import StoreError
from toolpin.storage.url import S3Location

DEFAULT_REGION: Final = "us-east-1"
SHA256_META: Final = "sha256"


class PreconditionFailed(Exception):
    """A conditional write or delete found the object not as expected (HTTP 412/409)."""


@dataclass(frozen=True)
class ObjectInfo:
    """What a listing or a HEAD says of one object."""

    etag: str
    """The ETag without quotes (the MD5 of the bytes for a single-part upload)."""
    size: int
    sha256: str | None = None
    cache_control: str | None = None
    content_type: str | None = None


def md5_etag(data: bytes) -> str:
    """The ETag S3 gives a single-part upload of ``data``."""
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def content_type(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    if rel.startswith("blob/sha256/"):
        return "application/json"  # a log's blobs are RFC 8785 JSON
    if name == "checkpoint":
        return "text/plain; charset=utf-8"
    guessed, _ = mimetypes.guess_type(name)
    if guessed is None:
        return "application/octet-stream"
    return f"{guessed}; charset=utf-8" if guessed.startswith("text/") else guessed


_LOADER: list[Any] = []
"""The data loader of the first session (see :func:`_client`)."""


def _client() -> Any:
    try:
        import boto3
        import botocore.session
        from botocore.config import Config
    except ImportError:
        raise StoreError(
            "s3:// locations need boto3",
            advice="Install it: pip install 'toolpin[s3]'.",
        ) from None
    core = botocore.session.get_session()
    session = boto3.session.Session(botocore_session=core)
    # Each session has its own credentials and settings, read now; the service models
    # (botocore's and boto3's own JSON files) are the same for every one. The first
    # session's loader, which keeps what it has parsed, serves the later ones: a new
    # client costs about 13 ms of CPU instead of 125 ms parsing the same files again.
    if _LOADER:
        core.register_component("data_loader", _LOADER[0])
    else:
        _LOADER.append(core.get_component("data_loader"))
    config = Config(
        connect_timeout=10,
        read_timeout=60,
        retries={"max_attempts": 4, "mode": "standard"},
        user_agent_extra="toolpin",
    )
    return session.client("s3", region_name=session.region_name or DEFAULT_REGION, config=config)


class Bucket:
    """The objects under one ``s3://bucket/prefix``, named relative to the prefix."""

    def __init__(self, location: S3Location, client: Any = None) -> None:
        self.location = location
        self._client_obj = client

    @property
    def url(self) -> str:
        return self.location.url

    @property
    def client(self) -> Any:
        if self._client_obj is None:
            self._client_obj = _client()
        return self._client_obj

    def _fail(self, exc: Exception, what: str) -> StoreError:
        from botocore.exceptions import ClientError, NoCredentialsError, PartialCredentialsError

        if isinstance(exc, ClientError):
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            hint = " (no such bucket?)" if status == 404 else ""
            return StoreError(f"{self.url}: {what} was refused with HTTP {status}{hint}")
        if isinstance(exc, NoCredentialsError | PartialCredentialsError):
            return StoreError(
                f"{self.url}: no AWS credentials were found",
                advice="Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE.",
            )
        return StoreError(f"{self.url}: {what} failed ({type(exc).__name__})")

    @staticmethod
    def _status(exc: Exception) -> int | None:
        response = getattr(exc, "response", None)
        if not isinstance(response, dict):
            return None
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return status if isinstance(status, int) else None

    def _call(self, what: str, method: str, **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self.client, method)(Bucket=self.location.bucket, **kwargs)
        except ClientError as exc:
            if self._status(exc) in (409, 412):
                raise PreconditionFailed(what) from None
            raise self._fail(exc, what) from None
        except BotoCoreError as exc:
            raise self._fail(exc, what) from None

    def _read(self, what: str, method: str, rel: str) -> Any:
        """The response of the read ``method`` (``get_object``, ``head_object``) on
        ``rel``; ``None`` when there is no such object (HTTP 404)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self.client, method)(
                Bucket=self.location.bucket, Key=self.location.key(rel)
            )
        except ClientError as exc:
            if self._status(exc) == 404:
                return None
            raise self._fail(exc, what) from None
        except BotoCoreError as exc:
            raise self._fail(exc, what) from None

    def get(self, rel: str, cap: int) -> bytes | None:
        """The bytes of ``rel`` (``None`` when absent); refuses one over ``cap`` bytes."""
        found = self.fetch(rel, cap)
        return None if found is None else found[0]

    def fetch(self, rel: str, cap: int) -> tuple[bytes, ObjectInfo] | None:
        """The bytes of ``rel`` and what its GET said of it (ETag, ``Cache-Control``,
        ``Content-Type``, the ``sha256`` metadata); ``None`` when absent; refuses one over
        ``cap`` bytes."""
        from botocore.exceptions import BotoCoreError

        what = f"reading {rel}"
        response = self._read(what, "get_object", rel)
        if response is None:
            return None
        body = response["Body"]
        try:
            if int(response.get("ContentLength", 0)) > cap:
                raise StoreError(f"{self.url}: {rel} is larger than any valid file of its kind")
            data: bytes = body.read(cap + 1)
        except BotoCoreError as exc:
            raise self._fail(exc, what) from None
        finally:
            body.close()
        if len(data) > cap:
            raise StoreError(f"{self.url}: {rel} is larger than any valid file of its kind")
        return data, _info(response, len(data))

    def head(self, rel: str) -> ObjectInfo | None:
        response = self._read(f"looking up {rel}", "head_object", rel)
        if response is None:
            return None
        return _info(response, int(response.get("ContentLength", 0)))

    def list(self) -> dict[str, ObjectInfo]:
        """Every object under the prefix, by name relative to it."""
        out: dict[str, ObjectInfo] = {}
        for item in self._iter_listing():
            key = str(item["Key"])
            rel = key[len(self.location.prefix) :]
            if rel:
                out[rel] = ObjectInfo(str(item.get("ETag", "")).strip('"'), int(item["Size"]))
        return out

    def _iter_listing(self) -> Iterator[dict[str, Any]]:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.location.bucket, Prefix=self.location.prefix
            )
            for page in pages:
                yield from page.get("Contents", [])
        except (ClientError, BotoCoreError) as exc:
            raise self._fail(exc, "listing the objects") from None

    def put(
        self,
        rel: str,
        data: bytes,
        *,
        cache_control: str,
        if_none_match: bool = False,
        if_match: str | None = None,
    ) -> str:
        """Write ``rel`` in one request (its ETag is its MD5) and return the ETag.

        ``if_none_match`` creates it only if absent, ``if_match`` replaces it only if its
        ETag is still that one; either raises :class:`PreconditionFailed` otherwise."""
        extra: dict[str, Any] = {}
        if if_none_match:
            extra["IfNoneMatch"] = "*"
        if if_match is not None:
            extra["IfMatch"] = f'"{if_match}"'
        response = self._call(
            f"writing {rel}",
            "put_object",
            Key=self.location.key(rel),
            Body=data,
            CacheControl=cache_control,
            ContentType=content_type(rel),
            ContentMD5=_b64_md5(data),
            Metadata={SHA256_META: hashlib.sha256(data).hexdigest()},
            **extra,
        )
        return str(response.get("ETag", "")).strip('"')

    def delete(self, rel: str, *, if_match: str | None = None) -> None:
        extra = {"IfMatch": f'"{if_match}"'} if if_match is not None else {}
        self._call(f"deleting {rel}", "delete_object", Key=self.location.key(rel), **extra)


def _info(response: dict[str, Any], size: int) -> ObjectInfo:
    meta = response.get("Metadata") or {}
    return ObjectInfo(
        etag=str(response.get("ETag", "")).strip('"'),
        size=size,
        sha256=meta.get(SHA256_META),
        cache_control=response.get("CacheControl"),
        content_type=response.get("ContentType"),
    )


def _b64_md5(data: bytes) -> str:
    import base64

    return base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode("ascii")


__all__ = ["Bucket", "ObjectInfo", "PreconditionFailed", "content_type", "md5_etag"]
