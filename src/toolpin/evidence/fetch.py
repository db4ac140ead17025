"""Fetching a published log's files: SSRF-guarded, capped, with a short timeout.

A published log is a folder of static files (``checkpoint``, ``tile/...``,
``api/v1/digests/<p>.json``). :class:`Fetcher` reads them through
:class:`toolpin.probe.ssrf.GuardedClient` with the environment's proxies and CA files
(``trust_env``; ``SSL_CERT_FILE`` and friends through :func:`toolpin.util.net.tls_context`,
built at the first https request: an http:// log never loads the trust store),
one timeout per request and a deadline for the whole lookup. Loopback and private
addresses are refused unless the caller allows them (``allow_private``, or
``TOOLPIN_LOG_ALLOW_PRIVATE=1`` in the environment: a log on the local network or a test).

A log in an S3-compatible bucket (``s3://bucket/prefix``) is read through
:class:`toolpin.storage.s3.Bucket` instead (credentials and endpoint from the standard AWS
variables and files), with the same caps and deadline.

Every failure is a :class:`~toolpin.evidence.errors.LogProblem` with fixed text: nothing a
server sent goes into a message.
"""

from __future__ import annotations

import os
import time
from typing import Any, Final

from toolpin.evidence.errors import LogProblem

USER_AGENT: Final = "toolpin-evidence"
ENV_ALLOW_PRIVATE: Final = "TOOLPIN_LOG_ALLOW_PRIVATE"
DEADLINE_FACTOR: Final = 4.0
"""A lookup's deadline is this many times its per-request timeout."""
MAX_LOOKUP_BYTES: Final = 64 << 20
"""The most one lookup reads in all (a real hit reads a few hundred KB)."""


def private_allowed(allow_private: bool | None) -> bool:
    """``allow_private`` as given, or (``None``) ``TOOLPIN_LOG_ALLOW_PRIVATE=1``."""
    if allow_private is not None:
        return allow_private
    return os.environ.get(ENV_ALLOW_PRIVATE, "") == "1"


class Fetcher:
    """GETs files under one base URL; counts the bytes it read (``fetched``)."""

    def __init__(self, url: str, *, timeout: float, allow_private: bool) -> None:
        from toolpin.probe.ssrf import AddressPolicy, GuardedClient, check_url

        self._bucket: Any = None
        if url.startswith("s3://"):
            self._bucket = _bucket_of(url)
            url = "https://bucket.invalid/"  # never requested: get() reads the bucket
        if not url.startswith(("https://", "http://")):
            raise LogProblem("unreachable", "the log URL must start with https:// or http://")
        try:
            check_url(url)
        except Exception:  # GuardError: a fixed reason, but say it our way
            raise LogProblem("unreachable", "the log URL cannot be used") from None
        self.base = url if url.endswith("/") else url + "/"
        self.timeout = timeout
        self.ends = time.monotonic() + timeout * DEADLINE_FACTOR
        self.deadline = timeout * DEADLINE_FACTOR
        self.fetched = 0
        self.requests = 0
        policy = AddressPolicy(allow_private=allow_private)
        self._client = GuardedClient(
            policy, timeout=timeout, user_agent=USER_AGENT, trust_env=True, tls_on_demand=True
        )

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def restart(self) -> None:
        """A new deadline from now, for the next part of a lookup (the byte cap stays)."""
        self.ends = time.monotonic() + self.deadline

    def get(self, rel: str, cap: int, *, what: str) -> bytes:
        """The bytes of ``rel`` (at most ``cap``); ``what`` names it in errors."""
        import httpx2

        from toolpin.errors import ProbeError

        remaining = self.ends - time.monotonic()
        if remaining <= 0:
            raise LogProblem("unreachable", f"the log took too long to answer ({what})")
        self.requests += 1
        if self._bucket is not None:
            return self._get_object(rel, cap, what)
        try:
            with self._client.stream(
                "GET",
                self.base + rel,
                headers={"Accept": "application/octet-stream, text/plain, application/json"},
                timeout=min(self.timeout, remaining),
            ) as response:
                if response.status_code != 200:
                    raise LogProblem(
                        "unreachable",
                        f"the log answered HTTP {response.status_code} for {what}",
                    )
                return self._read(response, cap, what)
        except LogProblem:
            raise
        except httpx2.TimeoutException:
            raise LogProblem("unreachable", f"the log did not answer in time ({what})") from None
        except (httpx2.HTTPError, ProbeError, OSError):
            raise LogProblem("unreachable", f"the log cannot be reached ({what})") from None

    def _get_object(self, rel: str, cap: int, what: str) -> bytes:
        from toolpin.errors import StoreError

        try:
            data: bytes | None = self._bucket.get(rel, cap)
        except StoreError as exc:
            if "larger than" in exc.message:
                raise LogProblem("tampered", f"{what} is larger than any valid file") from None
            raise LogProblem("unreachable", f"the log's bucket cannot be read ({what})") from None
        if data is None:
            raise LogProblem("unreachable", f"the log's bucket has no {what}")
        self.fetched += len(data)
        if self.fetched > MAX_LOOKUP_BYTES:
            raise LogProblem("unreachable", "the log sent more than one lookup reads")
        return data

    def _read(self, response: Any, cap: int, what: str) -> bytes:
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            self.fetched += len(chunk)
            if size > cap:
                raise LogProblem("tampered", f"{what} is larger than any valid file of its kind")
            if self.fetched > MAX_LOOKUP_BYTES:
                raise LogProblem("unreachable", "the log sent more than one lookup reads")
            if time.monotonic() > self.ends:
                raise LogProblem("unreachable", f"the log took too long to answer ({what})")
            chunks.append(chunk)
        return b"".join(chunks)


def _bucket_of(url: str) -> Any:
    from toolpin.errors import InputError
    from toolpin.storage.s3 import Bucket
    from toolpin.storage.url import parse_bucket_url

    try:
        return Bucket(parse_bucket_url(url))
    except InputError:
        raise LogProblem("unreachable", "the log URL cannot be used") from None


__all__ = ["ENV_ALLOW_PRIVATE", "MAX_LOOKUP_BYTES", "Fetcher", "private_allowed"]
