"""Fetching a published log's files: SSRF-guarded, capped, with a short timeout.

A published log is a folder of static files (``checkpoint``, ``tile/...``,
``api/v1/digests/<p>.json``). :class:`Fetcher` reads them with one timeout per request
and a deadline for the whole lookup, through one of two clients that make the same
checks:

* **plain** (no proxy configured in the environment, the usual case): the standard
  library's :mod:`http.client` over a socket opened by :func:`_guarded_socket`, which
  resolves the host and checks every address with the SSRF guard's own rules
  (:func:`toolpin.probe.addresses.resolve_checked`) and connects to the checked address
  itself (no DNS-rebinding window). TLS verifies the certificate against the host name
  with :func:`toolpin.util.net.tls_context` (the system store plus ``SSL_CERT_FILE`` and
  friends), built at the first https request: an http:// log never loads the trust store.
  Redirects are followed by hand (at most :data:`~toolpin.probe.ssrf.MAX_REDIRECTS`), each
  target checked again. It imports no HTTP library, so a first pin does not pay for one;
* **proxied** (``HTTPS_PROXY``, ``HTTP_PROXY`` or ``ALL_PROXY`` set, any case):
  :class:`toolpin.probe.ssrf.GuardedClient` with ``trust_env``, which sends through the
  proxy (``CONNECT`` for https) after checking the target, and honours ``NO_PROXY``.

Loopback and private addresses are refused unless the caller allows them
(``allow_private``, or ``TOOLPIN_LOG_ALLOW_PRIVATE=1`` in the environment: a log on the
local network or a test).

Every failure is a :class:`~toolpin.evidence.errors.LogProblem` with fixed text: nothing a
server sent goes into a message.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager as _contextmanager
from typing import TYPE_CHECKING, Any, Final

from toolpin.errors import ProbeError
from toolpin.evidence.errors import LogProblem

if TYPE_CHECKING:
    import http.client
    import socket
    import ssl

    from toolpin.probe.addresses import AddressPolicy

USER_AGENT: Final = "toolpin-evidence"
ENV_ALLOW_PRIVATE: Final = "TOOLPIN_LOG_ALLOW_PRIVATE"
DEADLINE_FACTOR: Final = 4.0
"""A lookup's deadline is this many times its per-request timeout."""
MAX_LOOKUP_BYTES: Final = 64 << 20
"""The most one lookup reads in all (a real hit reads a few hundred KB)."""
PROXY_VARIABLES: Final = ("http_proxy", "https_proxy", "all_proxy")
"""Any of these set (lower or upper case) sends the log's requests through the proxied
client."""
MAX_URL_CHARS: Final = 2048
MAX_REDIRECTS: Final = 3
REDIRECT_STATUSES: Final = frozenset({301, 302, 307, 308})
READ_CHUNK: Final = 64 << 10
ACCEPT: Final = "application/octet-stream, text/plain, application/json"


def private_allowed(allow_private: bool | None) -> bool:
    """``allow_private`` as given, or (``None``) ``TOOLPIN_LOG_ALLOW_PRIVATE=1``."""
    if allow_private is not None:
        return allow_private
    return os.environ.get(ENV_ALLOW_PRIVATE, "") == "1"


def proxy_configured() -> bool:
    """Whether the environment names an HTTP proxy (then the proxied client is used)."""
    return any(os.environ.get(name) or os.environ.get(name.upper()) for name in PROXY_VARIABLES)


class Fetcher:
    """GETs files under one base URL; counts the bytes it read (``fetched``)."""

    def __init__(self, url: str, *, timeout: float, allow_private: bool) -> None:
        from toolpin.probe.addresses import AddressPolicy

        if not url.startswith(("https://", "http://")):
            raise LogProblem("unreachable", "the log URL must start with https:// or http://")
        try:
            split_url(url)
        except ProbeError:  # GuardError: a fixed reason, but say it our way
            raise LogProblem("unreachable", "the log URL cannot be used") from None
        self.base = url if url.endswith("/") else url + "/"
        self.timeout = timeout
        self.ends = time.monotonic() + timeout * DEADLINE_FACTOR
        self.deadline = timeout * DEADLINE_FACTOR
        self.fetched = 0
        self.requests = 0
        policy = AddressPolicy(allow_private=allow_private)
        self._client: _Client = (
            _ProxiedClient(policy, timeout) if proxy_configured() else PlainClient(policy)
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
        remaining = self.ends - time.monotonic()
        if remaining <= 0:
            raise LogProblem("unreachable", f"the log took too long to answer ({what})")
        self.requests += 1
        try:
            with self._client.get(self.base + rel, min(self.timeout, remaining)) as answer:
                status, chunks = answer
                if status != 200:
                    raise LogProblem("unreachable", f"the log answered HTTP {status} for {what}")
                return self._read(chunks, cap, what)
        except LogProblem:
            raise
        except TimeoutError:
            raise LogProblem("unreachable", f"the log did not answer in time ({what})") from None
        except Exception as exc:
            if self._client.is_timeout(exc):
                raise LogProblem(
                    "unreachable", f"the log did not answer in time ({what})"
                ) from None
            if self._client.is_failure(exc):
                raise LogProblem("unreachable", f"the log cannot be reached ({what})") from None
            raise

    def _read(self, chunks: Iterable[bytes], cap: int, what: str) -> bytes:
        parts: list[bytes] = []
        size = 0
        for chunk in chunks:
            size += len(chunk)
            self.fetched += len(chunk)
            if size > cap:
                raise LogProblem("tampered", f"{what} is larger than any valid file of its kind")
            if self.fetched > MAX_LOOKUP_BYTES:
                raise LogProblem("unreachable", "the log sent more than one lookup reads")
            if time.monotonic() > self.ends:
                raise LogProblem("unreachable", f"the log took too long to answer ({what})")
            parts.append(chunk)
        return b"".join(parts)


class _Client:
    """What :class:`Fetcher` needs of a client: a streamed GET, and its error kinds."""

    def get(self, url: str, timeout: float) -> Any:  # a context manager of (status, chunks)
        raise NotImplementedError

    def is_timeout(self, exc: BaseException) -> bool:
        return False

    def is_failure(self, exc: BaseException) -> bool:
        import http.client

        return isinstance(exc, (ProbeError, OSError, http.client.HTTPException))

    def close(self) -> None:
        pass


def split_url(url: str) -> tuple[str, str, int, str]:
    """``(scheme, host, port, target)`` of an http(s) URL with a host and no credentials
    (the checks of :func:`toolpin.probe.ssrf.check_url`); a non-ASCII host in its IDNA
    form. Raises :class:`~toolpin.probe.addresses.GuardError` (fixed text)."""
    from urllib.parse import quote, urlsplit

    from toolpin.probe.addresses import GuardError

    if len(url) > MAX_URL_CHARS:
        raise GuardError(f"the URL is longer than {MAX_URL_CHARS} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
        host = parts.hostname
    except ValueError:
        raise GuardError("the URL cannot be parsed") from None
    if parts.scheme not in ("http", "https"):
        raise GuardError("only http and https URLs are crawled")
    if "@" in parts.netloc:
        raise GuardError("the URL carries credentials; refused")
    if not host:
        raise GuardError("the URL has no host")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise GuardError("the URL cannot be parsed") from None
    if " " in parts.netloc or any(ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        raise GuardError("the URL cannot be parsed")
    target = quote(parts.path or "/", safe="/%:@!$&'()*+,;=~-._")
    if parts.query:
        target += "?" + quote(parts.query, safe="/%:@!$&'()*+,;=~-._?")
    default = 443 if parts.scheme == "https" else 80
    return parts.scheme, host, port if port is not None else default, target


def _guarded_socket(
    host: str, port: int, timeout: float | None, policy: AddressPolicy
) -> socket.socket:
    """A TCP connection to ``host``: resolved, every address checked by the guard, and
    connected to the checked address itself."""
    import socket

    from toolpin.probe.addresses import resolve_checked

    address = resolve_checked(host, port, policy)
    sock = socket.create_connection((address, port), timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class PlainClient(_Client):
    """GET over :mod:`http.client` through the guard (see the module docs); one kept-alive
    connection per origin."""

    def __init__(self, policy: AddressPolicy) -> None:
        self.policy = policy
        self._connections: dict[tuple[str, str, int], http.client.HTTPConnection] = {}
        self._tls: ssl.SSLContext | None = None

    def _connection(self, scheme: str, host: str, port: int) -> http.client.HTTPConnection:
        key = (scheme, host, port)
        found = self._connections.get(key)
        if found is None:
            found = self._connections[key] = self._new(scheme, host, port)
        return found

    def _new(self, scheme: str, host: str, port: int) -> http.client.HTTPConnection:
        import http.client

        client = self

        class Guarded(http.client.HTTPConnection):
            default_port = 443 if scheme == "https" else 80

            def connect(self) -> None:
                sock = _guarded_socket(self.host, self.port, self.timeout, client.policy)
                if scheme == "https":
                    try:
                        sock = client.tls().wrap_socket(sock, server_hostname=self.host)
                    except BaseException:
                        sock.close()
                        raise
                self.sock = sock

        return Guarded(host, port)

    def tls(self) -> ssl.SSLContext:
        if self._tls is None:
            from toolpin.util.net import tls_context

            self._tls = tls_context()
        return self._tls

    def _forget(self, key: tuple[str, str, int]) -> None:
        found = self._connections.pop(key, None)
        if found is not None:
            found.close()

    def get(self, url: str, timeout: float) -> Any:
        return self._get(url, timeout)

    @_contextmanager
    def _get(self, url: str, timeout: float) -> Iterator[tuple[int, Iterable[bytes]]]:
        from urllib.parse import urljoin

        from toolpin.probe.addresses import GuardError

        for _ in range(MAX_REDIRECTS + 1):
            scheme, host, port, target = split_url(url)
            key = (scheme, host, port)
            response = self._request(key, target, timeout)
            try:
                location = response.getheader("location")
                if response.status in REDIRECT_STATUSES and location:
                    self._forget(key)
                    try:
                        url = urljoin(url, location)
                    except ValueError:
                        raise GuardError("a redirect to a URL that cannot be parsed") from None
                    continue
                yield response.status, _chunks(response)
                if not response.isclosed():
                    self._forget(key)  # not read to its end: the connection is not reused
                return
            except BaseException:
                self._forget(key)
                raise
        raise GuardError(f"more than {MAX_REDIRECTS} redirects")

    def _request(
        self, key: tuple[str, str, int], target: str, timeout: float
    ) -> http.client.HTTPResponse:
        import http.client

        for attempt in (0, 1):
            connection = self._connection(*key)
            reused = connection.sock is not None
            connection.timeout = timeout
            if connection.sock is not None:
                connection.sock.settimeout(timeout)
            try:
                connection.request(
                    "GET",
                    target,
                    headers={"User-Agent": USER_AGENT, "Accept": ACCEPT},
                )
                return connection.getresponse()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self._forget(key)
                if not reused or attempt:
                    raise  # a kept-alive connection the server closed is tried once more
            except BaseException:
                self._forget(key)
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        for key in list(self._connections):
            self._forget(key)


def _chunks(response: http.client.HTTPResponse) -> Iterator[bytes]:
    while True:
        chunk = response.read(READ_CHUNK)
        if not chunk:
            return
        yield chunk


class _ProxiedClient(_Client):
    """:class:`toolpin.probe.ssrf.GuardedClient` with the environment's proxies."""

    def __init__(self, policy: AddressPolicy, timeout: float) -> None:
        from toolpin.probe.ssrf import GuardedClient

        self._client = GuardedClient(
            policy, timeout=timeout, user_agent=USER_AGENT, trust_env=True, tls_on_demand=True
        )

    def get(self, url: str, timeout: float) -> Any:
        return self._get(url, timeout)

    @_contextmanager
    def _get(self, url: str, timeout: float) -> Iterator[tuple[int, Iterable[bytes]]]:
        with self._client.stream(
            "GET", url, headers={"Accept": ACCEPT}, timeout=timeout
        ) as response:
            yield response.status_code, response.iter_bytes()

    def is_timeout(self, exc: BaseException) -> bool:
        import httpx2

        return isinstance(exc, httpx2.TimeoutException)

    def is_failure(self, exc: BaseException) -> bool:
        import httpx2

        return isinstance(exc, httpx2.HTTPError) or super().is_failure(exc)

    def close(self) -> None:
        self._client.close()


__all__ = [
    "ENV_ALLOW_PRIVATE",
    "MAX_LOOKUP_BYTES",
    "Fetcher",
    "PlainClient",
    "private_allowed",
    "proxy_configured",
    "split_url",
]
