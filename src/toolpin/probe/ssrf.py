"""The SSRF guard for crawling Streamable HTTP servers found in public listings.

A URL from a registry is attacker-controlled. Before any byte is sent:

* the URL must be ``http`` or ``https``, with a host, and without credentials
  (``user:pass@``);
* the host is resolved **at connect time, inside the HTTP stack** (a custom
  ``httpcore2`` network backend), every address it resolves to is checked, and the TCP
  connection is made to the checked address itself, so there is no window between the
  check and the connect for DNS rebinding. TLS still verifies the certificate against the
  host name (SNI and ``Host`` are unchanged);
* redirects are followed by hand, at most :data:`MAX_REDIRECTS`, and each target goes
  through the same checks (and its own resolution);
* environment proxies are ignored by default (a proxy connects on our behalf). Clients
  for URLs the user chose (``toolpin run --url``, the lock's probe) pass
  ``trust_env=True``: the proxies of ``HTTPS_PROXY``/``HTTP_PROXY``/``ALL_PROXY``/
  ``NO_PROXY`` (read as ``httpx2``'s ``trust_env`` reads them) are used, and the target
  still goes through the guard before a byte is sent to the proxy
  (:func:`precheck_target`): a literal address is checked, a name is resolved here and
  every address checked; a name this machine cannot resolve is left to the proxy (the
  proxy resolves it on its own network, where this machine's addresses mean nothing).
  The proxy itself is the user's configuration and is not checked. Only ``http://`` and
  ``https://`` proxies are supported; another scheme (``socks5://``) refuses the request.

Refused addresses (:func:`address_refusal`): loopback, private (RFC 1918), CGNAT
(100.64/10), IPv6 unique-local (fc00::/7), link-local (169.254/16 including the cloud
metadata address 169.254.169.254, fe80::/10), multicast, unspecified (0.0.0.0/8, ::),
IPv4 embedded in IPv6 (mapped ``::ffff:a.b.c.d``, 6to4, NAT64) when the IPv4 address is
refused, and everything else that is not globally routable (documentation, benchmarking,
reserved ranges). ``allow_private`` (``--allow-private``) admits loopback, private, CGNAT,
unique-local and reserved ranges, for crawling a lab network or tests; link-local
(metadata), multicast and unspecified addresses stay refused even then.
``allowed_networks`` admits exactly the networks listed.

Hand-written because no chosen library offers a connect-time address check; ``httpx2``
provides the HTTP, this module only the backend that decides where a socket may go.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

import httpcore2
import httpx2

from toolpin.probe.addresses import MAX_URL_CHARS as MAX_URL_CHARS

# The address rules live in the light module (no HTTP stack); re-exported here.
from toolpin.probe.addresses import AddressPolicy as AddressPolicy
from toolpin.probe.addresses import GuardError as GuardError
from toolpin.probe.addresses import IPAddress as IPAddress
from toolpin.probe.addresses import IPNetwork as IPNetwork
from toolpin.probe.addresses import address_class as address_class
from toolpin.probe.addresses import precheck_target as precheck_target
from toolpin.probe.addresses import resolve_checked as resolve_checked
from toolpin.probe.addresses import split_url as split_url
from toolpin.util.closing import Closing

SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)

MAX_REDIRECTS: Final = 3
REDIRECT_STATUSES: Final = frozenset({301, 302, 307, 308})


def check_url(url: str | httpx2.URL) -> httpx2.URL:
    """Check a URL's form with the guard's one parser (:func:`split_url`: scheme, host,
    port, no credentials...), then give it as ``httpx2`` takes it. Raises GuardError."""
    text = str(url)
    split_url(text)  # every refusal is made here, as for the light client
    try:
        parsed = httpx2.URL(text)
    except (httpx2.InvalidURL, ValueError, TypeError):
        raise GuardError("the URL cannot be parsed") from None
    if parsed.scheme not in ("http", "https") or parsed.userinfo or not parsed.host:
        raise GuardError("the URL cannot be parsed")  # the two parsers disagree: refused
    return parsed


class GuardedBackend(httpcore2.SyncBackend):
    """A network backend that connects only to addresses the policy allows."""

    def __init__(self, policy: AddressPolicy) -> None:
        self.policy = policy

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore2.NetworkStream:
        address = resolve_checked(host, port, self.policy)
        return super().connect_tcp(address, port, timeout, local_address, socket_options)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore2.NetworkStream:  # pragma: no cover - never configured
        raise GuardError("unix sockets are not crawled")


class _Stream(httpx2.SyncByteStream):
    def __init__(self, inner: Iterable[bytes], request: httpx2.Request) -> None:
        self._inner = inner
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        with _mapped(self._request):
            yield from self._inner

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()


@contextlib.contextmanager
def _mapped(request: httpx2.Request) -> Iterator[None]:
    try:
        yield
    except httpcore2.TimeoutException as exc:
        raise httpx2.TimeoutException(str(exc) or "timed out", request=request) from None
    except httpcore2.ConnectError as exc:
        raise httpx2.ConnectError(str(exc) or "cannot connect", request=request) from None
    except (httpcore2.NetworkError, httpcore2.ProtocolError, httpcore2.UnsupportedProtocol) as exc:
        raise httpx2.TransportError(str(exc) or type(exc).__name__, request=request) from None


class GuardedTransport(httpx2.BaseTransport):
    """An ``httpx2`` transport over a connection pool with :class:`GuardedBackend`, or
    through ``proxy`` (an ``http(s)://`` URL) after :func:`precheck_target`."""

    def __init__(
        self,
        policy: AddressPolicy,
        *,
        verify: bool = True,
        proxy: str | None = None,
        tls_on_demand: bool = False,
    ) -> None:
        self._policy = policy
        self._verify = verify
        self._proxied = proxy is not None
        self._refusal: str | None = None
        self._pools: dict[bool, httpcore2.ConnectionPool] = {}
        """By whether the pool makes TLS connections. With ``tls_on_demand`` a direct
        transport builds the TLS context (loading the trust store costs tens of ms, and
        a bad CA setting is an error) only for its first https request; an http:// log
        never needs it."""
        if proxy is None and not tls_on_demand:
            pool = self._pool(b"https")
            self._pools[False] = pool
        if proxy is not None:
            context = self._context()
            core_proxy, self._refusal = _core_proxy(proxy, context)
            if core_proxy is not None:
                pool = httpcore2.ConnectionPool(
                    ssl_context=context, max_connections=4, proxy=core_proxy
                )
                self._pools = {True: pool, False: pool}

    def _context(self) -> ssl.SSLContext:
        from toolpin.util.net import tls_context

        # The machine's trust store plus the CA files it configures (SSL_CERT_FILE, ...).
        return tls_context() if self._verify else httpx2.create_ssl_context(verify=False)

    def _pool(self, scheme: bytes) -> httpcore2.ConnectionPool:
        tls = scheme not in (b"http", b"ws")
        pool = self._pools.get(tls)
        if pool is None:
            # A plain pool is only ever handed http:// requests, so it never makes a TLS
            # connection (its context would be httpcore's default, not the machine's).
            pool = self._pools[tls] = httpcore2.ConnectionPool(
                ssl_context=self._context() if tls else None,
                max_connections=4,
                network_backend=GuardedBackend(self._policy),
            )
        return pool

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        assert isinstance(request.stream, httpx2.SyncByteStream)
        if self._refusal is not None:
            raise GuardError(self._refusal)
        if self._proxied:
            precheck_target(
                request.url.host, request.url.port or _default_port(request), self._policy
            )
        core_request = httpcore2.Request(
            method=request.method,
            url=httpcore2.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        pool = self._pool(request.url.raw_scheme)
        with _mapped(request):
            response = pool.handle_request(core_request)
        assert isinstance(response.stream, Iterable)
        return httpx2.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Stream(response.stream, request),
            extensions=response.extensions,
        )

    def close(self) -> None:
        for pool in {id(pool): pool for pool in self._pools.values()}.values():
            pool.close()


def _default_port(request: httpx2.Request) -> int:
    return 443 if request.url.scheme == "https" else 80


def _core_proxy(url: str, context: ssl.SSLContext) -> tuple[httpcore2.Proxy | None, str | None]:
    """The ``httpcore2`` proxy for a proxy URL, or why it cannot be used (fixed text)."""
    from urllib.parse import unquote

    try:
        parsed = httpx2.URL(url)
    except (httpx2.InvalidURL, ValueError, TypeError):
        return None, "the proxy set in the environment (HTTPS_PROXY...) cannot be parsed"
    if parsed.scheme not in ("http", "https") or not parsed.host:
        return None, (
            "the proxy set in the environment (HTTPS_PROXY...) is not an http:// or "
            "https:// proxy; toolpin supports only those"
        )
    auth = None
    if parsed.username or parsed.password:
        auth = (unquote(parsed.username), unquote(parsed.password))
    bare = parsed.copy_with(username=None, password=None)
    return httpcore2.Proxy(str(bare), auth=auth, ssl_context=context), None


def guarded_mounts(policy: AddressPolicy, *, verify: bool = True) -> dict[str, Any]:
    """``httpx2`` mounts for the proxies the environment configures: each proxied pattern
    gets a :class:`GuardedTransport` through that proxy, a ``NO_PROXY`` pattern ``None``
    (the client's own, direct, guarded transport)."""
    from toolpin.util.net import environment_proxies

    mounts: dict[str, Any] = {}
    for pattern, proxy in environment_proxies().items():
        mounts[pattern] = (
            None if proxy is None else GuardedTransport(policy, verify=verify, proxy=proxy)
        )
    return mounts


class GuardedClient(Closing):
    """An ``httpx2.Client`` that goes through the guard and follows redirects by hand;
    with ``trust_env``, through the environment's proxies (see the module docs)."""

    def __init__(
        self,
        policy: AddressPolicy,
        *,
        timeout: float,
        user_agent: str,
        verify: bool = True,
        max_redirects: int = MAX_REDIRECTS,
        trust_env: bool = False,
        tls_on_demand: bool = False,
    ) -> None:
        self.max_redirects = max_redirects
        self._client = httpx2.Client(
            transport=GuardedTransport(policy, verify=verify, tls_on_demand=tls_on_demand),
            mounts=guarded_mounts(policy, verify=verify) if trust_env else None,
            timeout=timeout,
            follow_redirects=False,
            trust_env=False,
            headers={"User-Agent": user_agent},
        )

    def close(self) -> None:
        self._client.close()

    @contextlib.contextmanager
    def stream(
        self,
        method: str,
        url: str | httpx2.URL,
        *,
        headers: Mapping[str, str],
        content: bytes | None = None,
        timeout: float | None = None,
        same_origin: bool = False,
    ) -> Iterator[httpx2.Response]:
        """Send a request (re-sent as is to each redirect target, at most
        ``max_redirects``); yields the final response, streaming. ``response.url`` is
        the URL that answered. With ``same_origin`` (the headers carry credentials), a
        redirect to another origin is refused."""
        target = check_url(url)
        origin = (target.scheme, target.host, target.port)
        hops = 0
        while True:
            request = self._client.build_request(
                method,
                target,
                headers=dict(headers),
                content=content,
                timeout=timeout if timeout is not None else httpx2.USE_CLIENT_DEFAULT,
            )
            response = self._client.send(request, stream=True)
            try:
                location = response.headers.get("location")
                if response.status_code in REDIRECT_STATUSES and location:
                    hops += 1
                    if hops > self.max_redirects:
                        raise GuardError(f"more than {self.max_redirects} redirects")
                    try:
                        target = check_url(target.join(location))
                    except (httpx2.InvalidURL, ValueError):
                        raise GuardError("a redirect to a URL that cannot be parsed") from None
                    if same_origin and (target.scheme, target.host, target.port) != origin:
                        raise GuardError(
                            "the server redirected to another origin; refused (headers and "
                            "tokens are sent only to the server's own origin)"
                        )
                    continue
                yield response
                return
            finally:
                response.close()
