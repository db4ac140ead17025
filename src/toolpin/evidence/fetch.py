"""Fetching a published log's files: SSRF-guarded, capped, with a short timeout.

A published log is a folder of static files (``checkpoint``, ``tile/...``,
``api/v1/digests/<p>.json``). :class:`Fetcher` reads them with one timeout per request
and a deadline for the whole lookup, through one of two clients that make the same
checks:

* **plain** (no proxy configured in the environment, the usual case): HTTP/1.1 GETs
  written and read here (:class:`PlainClient`: a status line, headers, a body sized by
  ``Content-Length``, chunked, or ending at the close; anything else is refused) over a
  socket opened by :func:`_guarded_socket`, which
  resolves the host and checks every address with the SSRF guard's own rules
  (:func:`toolpin.probe.addresses.resolve_checked`) and connects to the checked address
  itself (no DNS-rebinding window). TLS verifies the certificate against the host name
  with :func:`toolpin.util.net.tls_context` (the system store plus ``SSL_CERT_FILE`` and
  friends), built at the first https request: an http:// log never loads the trust store.
  Redirects are followed by hand (at most :data:`~toolpin.probe.ssrf.MAX_REDIRECTS`), each
  target checked again. It imports no HTTP module (not even :mod:`http.client`, whose
  ``email`` parser costs a first pin about 10 ms of CPU);
* **proxied** (``HTTPS_PROXY``, ``HTTP_PROXY`` or ``ALL_PROXY`` set, any case):
  :class:`toolpin.probe.ssrf.GuardedClient` with ``trust_env``, which sends through the
  proxy (``CONNECT`` for https) after checking the target, and honours ``NO_PROXY``.

Loopback and private addresses are refused unless the caller allows them
(``allow_private``, or ``TOOLPIN_LOG_ALLOW_PRIVATE=1`` in the environment: a log on the
local network or a test).

A log in an S3-compatible bucket (``s3://bucket/prefix``) is read through
:class:`toolpin.storage.s3.Bucket` instead (credentials and endpoint from the standard AWS
variables and files), with the same caps and deadline.

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
from toolpin.util.closing import Closing

if TYPE_CHECKING:
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


class Fetcher(Closing):
    """GETs files under one base URL; counts the bytes it read (``fetched``)."""

    def __init__(self, url: str, *, timeout: float, allow_private: bool) -> None:
        from toolpin.probe.addresses import AddressPolicy

        self._bucket: Any = None
        if url.startswith("s3://"):
            self._bucket = _bucket_of(url)
            url = "https://bucket.invalid/"  # never requested: get() reads the bucket
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

    def close(self) -> None:
        self._client.close()

    def restart(self) -> None:
        """A new deadline from now, for the next part of a lookup (the byte cap stays)."""
        self.ends = time.monotonic() + self.deadline

    def get(self, rel: str, cap: int, *, what: str) -> bytes:
        """The bytes of ``rel`` (at most ``cap``); ``what`` names it in errors."""
        data = self._get(rel, cap, what, absent_ok=False)
        assert data is not None
        return data

    def get_if_present(self, rel: str, cap: int, *, what: str) -> bytes | None:
        """As :meth:`get`, but ``None`` when the log says there is no such file (HTTP 404,
        or no such object in a bucket)."""
        return self._get(rel, cap, what, absent_ok=True)

    def _get(self, rel: str, cap: int, what: str, *, absent_ok: bool) -> bytes | None:
        remaining = self.ends - time.monotonic()
        if remaining <= 0:
            raise LogProblem("unreachable", f"the log took too long to answer ({what})")
        self.requests += 1
        if self._bucket is not None:
            return self._get_object(rel, cap, what, absent_ok=absent_ok)
        try:
            with self._client.get(self.base + rel, min(self.timeout, remaining)) as answer:
                status, chunks = answer
                if status == 404 and absent_ok:
                    return None
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

    def _get_object(self, rel: str, cap: int, what: str, *, absent_ok: bool) -> bytes | None:
        from toolpin.errors import StoreError

        try:
            data: bytes | None = self._bucket.get(rel, cap)
        except StoreError as exc:
            if "larger than" in exc.message:
                raise LogProblem("tampered", f"{what} is larger than any valid file") from None
            raise LogProblem("unreachable", f"the log's bucket cannot be read ({what})") from None
        if data is None:
            if absent_ok:
                return None
            raise LogProblem("unreachable", f"the log's bucket has no {what}")
        self.fetched += len(data)
        if self.fetched > MAX_LOOKUP_BYTES:
            raise LogProblem("unreachable", "the log sent more than one lookup reads")
        return data

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
        return isinstance(exc, (ProbeError, OSError))

    def close(self) -> None:
        pass


def split_url(url: str) -> tuple[str, str, int, str]:
    """``(scheme, host, port, target)``: :func:`toolpin.probe.addresses.split_url`, the
    guard's one URL parser. Raises :class:`~toolpin.probe.addresses.GuardError`."""
    from toolpin.probe.addresses import split_url as split

    return split(url)


def _guarded_socket(
    host: str, port: int, timeout: float | None, policy: AddressPolicy
) -> socket.socket:
    """A TCP connection to ``host``: resolved, every address checked by the guard, and
    connected to the checked address itself."""
    import socket

    from toolpin.probe.addresses import connect_checked, resolve_checked

    address = resolve_checked(host, port, policy)
    sock = connect_checked(address, port, timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class BadResponse(OSError):
    """The log's answer is not HTTP/1.x as this client reads it (a failure to reach the
    log: fixed text, nothing of the answer)."""


MAX_HEAD_LINE: Final = 8 << 10
MAX_HEADERS: Final = 100


class _Connection:
    """One kept-alive HTTP/1.1 connection: a socket and its buffered reader."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader = sock.makefile("rb")
        self.used = False

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


class _Response:
    """An answer's status, headers (lower-case names) and body, read as it streams."""

    def __init__(self, connection: _Connection, status: int, headers: dict[str, str]) -> None:
        self.connection = connection
        self.status = status
        self.headers = headers
        self.done = False
        """The body was read to its end and the connection may carry the next request."""

    def body(self) -> Iterator[bytes]:
        reader = self.connection.reader
        coding = self.headers.get("transfer-encoding")
        length = self.headers.get("content-length")
        keep = self.headers.get("connection", "").lower() != "close"
        if self.status in (204, 304):
            self.done = keep
            return
        if coding is not None:
            if coding.strip().lower() != "chunked":
                raise BadResponse("a transfer coding this client does not read")
            while True:
                size = _chunk_size(_line(reader))
                if size == 0:
                    while _line(reader) not in (b"\r\n", b"\n"):  # trailers, ignored
                        pass
                    break
                yield from _exactly(reader, size)
                if _line(reader) not in (b"\r\n", b"\n"):
                    raise BadResponse("a chunk without its line end")
            self.done = keep
            return
        if length is not None:
            values = {v.strip() for v in length.split(",")}
            if len(values) != 1 or not next(iter(values)).isdigit():
                raise BadResponse("an unusable Content-Length")
            yield from _exactly(reader, int(next(iter(values))))
            self.done = keep
            return
        while True:  # the body ends when the server closes the connection
            chunk = reader.read1(READ_CHUNK)
            if not chunk:
                return
            yield chunk


def _line(reader: Any) -> bytes:
    line: bytes = reader.readline(MAX_HEAD_LINE + 1)
    if len(line) > MAX_HEAD_LINE:
        raise BadResponse("a line longer than this client reads")
    if not line:
        raise BadResponse("the connection closed in the middle of an answer")
    return line


def _chunk_size(line: bytes) -> int:
    text = line.split(b";", 1)[0].strip()
    if not text or len(text) > 16 or any(c not in b"0123456789abcdefABCDEF" for c in text):
        raise BadResponse("a chunk size that is not hex")
    return int(text, 16)


def _exactly(reader: Any, size: int) -> Iterator[bytes]:
    while size > 0:
        chunk: bytes = reader.read1(min(size, READ_CHUNK))
        if not chunk:
            raise BadResponse("the connection closed in the middle of an answer")
        size -= len(chunk)
        yield chunk


class _Closed(Exception):
    """A kept-alive connection the server had closed (the request is sent once more)."""


def _read_head(connection: _Connection) -> tuple[int, dict[str, str]]:
    reader = connection.reader
    while True:
        first = reader.readline(MAX_HEAD_LINE + 1)
        if not first:
            raise _Closed
        parts = first.split(None, 2)
        if (
            len(first) > MAX_HEAD_LINE
            or len(parts) < 2
            or parts[0] not in (b"HTTP/1.1", b"HTTP/1.0")
            or len(parts[1]) != 3
            or not parts[1].isdigit()
        ):
            raise BadResponse("not an HTTP/1.x answer")
        status = int(parts[1])
        headers: dict[str, str] = {}
        for _ in range(MAX_HEADERS + 1):
            line = _line(reader)
            if line in (b"\r\n", b"\n"):
                break
            if line[:1] in (b" ", b"\t"):
                raise BadResponse("a folded header line")
            name, colon, value = line.partition(b":")
            if not colon or not name or name != name.strip():
                raise BadResponse("a malformed header line")
            key = name.decode("latin-1").lower()
            text = value.strip().decode("latin-1")
            if key in headers and key in ("content-length", "transfer-encoding", "location"):
                headers[key] += "," + text
            else:
                headers[key] = text
        else:
            raise BadResponse("more header lines than this client reads")
        if parts[0] == b"HTTP/1.0" and headers.get("connection", "").lower() != "keep-alive":
            headers["connection"] = "close"
        if 100 <= status < 200:
            if status == 101:
                raise BadResponse("an upgrade this client does not make")
            continue  # an interim answer: the real one follows
        return status, headers


class PlainClient(_Client):
    """GET over HTTP/1.1 through the guard (see the module docs): the standard library's
    sockets and ``ssl``, with a small response reader (status line, headers, a body sized
    by ``Content-Length``, chunked, or ending at the close), so a lookup imports no HTTP
    module at all; one kept-alive connection per origin."""

    def __init__(self, policy: AddressPolicy) -> None:
        self.policy = policy
        self._connections: dict[tuple[str, str, int], _Connection] = {}
        self._tls: ssl.SSLContext | None = None

    def _open(self, scheme: str, host: str, port: int, timeout: float) -> _Connection:
        sock = _guarded_socket(host, port, timeout, self.policy)
        if scheme == "https":
            try:
                sock = self.tls().wrap_socket(sock, server_hostname=host)
            except BaseException:
                sock.close()
                raise
        return _Connection(sock)

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
                location = response.headers.get("location")
                if response.status in REDIRECT_STATUSES and location:
                    self._forget(key)
                    try:
                        url = urljoin(url, location)
                    except ValueError:
                        raise GuardError("a redirect to a URL that cannot be parsed") from None
                    continue
                yield response.status, response.body()
                if not response.done:
                    self._forget(key)  # not read to its end: the connection is not reused
                return
            except BaseException:
                self._forget(key)
                raise
        raise GuardError(f"more than {MAX_REDIRECTS} redirects")

    def _request(self, key: tuple[str, str, int], target: str, timeout: float) -> _Response:
        scheme, host, port = key
        shown = f"[{host}]" if ":" in host else host
        if port != (443 if scheme == "https" else 80):
            shown += f":{port}"
        head = (
            f"GET {target} HTTP/1.1\r\nHost: {shown}\r\nUser-Agent: {USER_AGENT}\r\n"
            f"Accept: {ACCEPT}\r\nAccept-Encoding: identity\r\n\r\n"
        ).encode("ascii")
        for attempt in (0, 1):
            connection = self._connections.get(key)
            if connection is None:
                connection = self._connections[key] = self._open(scheme, host, port, timeout)
            reused = connection.used
            connection.used = True
            try:
                connection.sock.settimeout(timeout)
                connection.sock.sendall(head)
                status, headers = _read_head(connection)
                return _Response(connection, status, headers)
            except (_Closed, ConnectionResetError, BrokenPipeError):
                self._forget(key)
                if not reused or attempt:
                    raise BadResponse("the log closed the connection") from None
                # a kept-alive connection the server closed is tried once more
            except BaseException:
                self._forget(key)
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        for key in list(self._connections):
            self._forget(key)


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


def _bucket_of(url: str) -> Any:
    from toolpin.errors import InputError
    from toolpin.storage.s3 import Bucket
    from toolpin.storage.url import parse_bucket_url

    try:
        return Bucket(parse_bucket_url(url))
    except InputError:
        raise LogProblem("unreachable", "the log URL cannot be used") from None


__all__ = [
    "ENV_ALLOW_PRIVATE",
    "MAX_LOOKUP_BYTES",
    "Fetcher",
    "PlainClient",
    "private_allowed",
    "proxy_configured",
    "split_url",
]
