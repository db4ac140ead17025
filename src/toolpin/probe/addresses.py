"""The address half of the SSRF guard: which URLs and addresses toolpin may connect to.

Pure standard library (no HTTP stack), so a light client can use the same guard
(:mod:`toolpin.evidence.fetch` on its plain path); :mod:`toolpin.probe.ssrf` re-exports
every name and documents the rules.

:func:`split_url` is toolpin's one URL parser for the guard: both the light client and
:func:`toolpin.probe.ssrf.check_url` (the ``httpx2`` clients) make their refusals with it
(too long, not ``http``/``https``, credentials or an ``@`` in the authority, no host, a
port that is not a number in 1..65535, a percent-encoded or otherwise unusable host, a
host that is not valid IDNA, spaces or control characters anywhere).
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from dataclasses import dataclass
from typing import Final

from toolpin.errors import ProbeError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
_METADATA: Final = (
    ipaddress.ip_address("169.254.169.254"),
    ipaddress.ip_address("fd00:ec2::254"),
)
_CGNAT: Final = ipaddress.ip_network("100.64.0.0/10")
_THIS_NETWORK: Final = ipaddress.ip_network("0.0.0.0/8")
_NAT64: Final = ipaddress.ip_network("64:ff9b::/96")
_ALWAYS_REFUSED: Final = frozenset({"link-local", "cloud metadata", "multicast", "unspecified"})


MAX_URL_CHARS: Final = 2048
_TARGET_SAFE: Final = "/%:@!$&'()*+,;=~-._"
_HOST_FORBIDDEN: Final = frozenset("%\\/?#@ ")


class GuardError(ProbeError):
    """The SSRF guard refused a URL or an address (fixed text; no server text)."""


def split_url(url: str) -> tuple[str, str, int, str]:
    """``(scheme, host, port, target)`` of an http(s) URL the guard accepts (see the
    module docs); a non-ASCII host in its IDNA form, an IPv6 host without brackets, the
    target percent-encoded. Raises :class:`GuardError` (fixed text)."""
    from urllib.parse import quote, urlsplit

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
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in url) or " " in parts.netloc:
        raise GuardError("the URL cannot be parsed")
    if port == 0:
        raise GuardError("the URL cannot be parsed")
    if _HOST_FORBIDDEN & set(host):
        raise GuardError("the URL cannot be parsed")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise GuardError("the URL cannot be parsed") from None
    target = quote(parts.path or "/", safe=_TARGET_SAFE)
    if parts.query:
        target += "?" + quote(parts.query, safe=_TARGET_SAFE + "?")
    default = 443 if parts.scheme == "https" else 80
    return parts.scheme, host, port if port is not None else default, target


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    teredo = address.teredo
    if teredo is not None:
        return teredo[1]
    return None


def address_class(address: IPAddress) -> str | None:
    """Why an address is not a public one (``"loopback"``, ``"private"``...), or ``None``."""
    if address in _METADATA:
        return "cloud metadata"
    if isinstance(address, ipaddress.IPv6Address):
        inner = _embedded_ipv4(address)
        if inner is not None:
            reason = address_class(inner)
            return f"IPv4-embedded {reason}" if reason else None
    if address.is_unspecified or (
        isinstance(address, ipaddress.IPv4Address) and address in _THIS_NETWORK
    ):
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if isinstance(address, ipaddress.IPv6Address):
        if address in ipaddress.ip_network("fc00::/7"):
            return "unique-local"
    elif address in _CGNAT:
        return "CGNAT"
    elif address.is_private:
        return "private" if _rfc1918(address) else "reserved"
    return None if address.is_global else "reserved"


def _rfc1918(address: ipaddress.IPv4Address) -> bool:
    return any(
        address in ipaddress.ip_network(net)
        for net in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
    )


@dataclass(frozen=True)
class AddressPolicy:
    """Which addresses the crawler may connect to."""

    allow_private: bool = False
    allowed_networks: tuple[IPNetwork, ...] = ()

    def refusal(self, address: IPAddress) -> str | None:
        """Why ``address`` is refused (fixed text), or ``None`` when it is allowed."""
        if any(address.version == net.version and address in net for net in self.allowed_networks):
            return None
        reason = address_class(address)
        if reason is None:
            return None
        base = reason.removeprefix("IPv4-embedded ")
        if self.allow_private and base not in _ALWAYS_REFUSED:
            return None
        return f"a {reason} address"


def resolve_checked(host: str, port: int, policy: AddressPolicy) -> str:
    """Resolve ``host`` and return an address to connect to; every address it resolves
    to must pass ``policy`` (one refused address refuses the host)."""
    literal = host.strip("[]")
    try:
        addresses: list[IPAddress] = [ipaddress.ip_address(literal)]
    except ValueError:
        try:
            infos = socket.getaddrinfo(_ascii(host), port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise GuardError("the host name does not resolve") from None
        addresses = []
        for info in infos:
            raw = str(info[4][0]).split("%", 1)[0]
            with contextlib.suppress(ValueError):
                ip = ipaddress.ip_address(raw)
                if ip not in addresses:
                    addresses.append(ip)
    if not addresses:
        raise GuardError("the host name does not resolve")
    for ip in addresses:
        reason = policy.refusal(ip)
        if reason is not None:
            raise GuardError(
                f"refused to connect to {reason} (SSRF guard)",
                advice="Pass --allow-private to crawl servers on a private network.",
            )
    return str(addresses[0])


def _ascii(host: str) -> str | bytes:
    """An ASCII host as bytes: ``getaddrinfo`` then needs no IDNA codec (importing it
    costs milliseconds); any other host as given."""
    return host.encode("ascii") if host.isascii() else host


def connect_checked(address: str, port: int, timeout: float | None) -> socket.socket:
    """A TCP connection to ``address`` (an IP address :func:`resolve_checked` returned),
    made without a second name lookup."""
    ip = ipaddress.ip_address(address)
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect((address, port))
    except BaseException:
        sock.close()
        raise
    return sock


def precheck_target(host: str, port: int, policy: AddressPolicy) -> None:
    """Check a target that a proxy will connect to (see the module docs). Raises
    GuardError for a refused address; a name that does not resolve here passes."""
    literal = host.strip("[]")
    try:
        ipaddress.ip_address(literal)
    except ValueError:
        try:
            socket.getaddrinfo(_ascii(host), port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return  # resolved by the proxy, on its network
    resolve_checked(host, port, policy)


__all__ = [
    "MAX_URL_CHARS",
    "AddressPolicy",
    "GuardError",
    "IPAddress",
    "IPNetwork",
    "address_class",
    "connect_checked",
    "precheck_target",
    "resolve_checked",
    "split_url",
]
