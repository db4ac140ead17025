"""The address half of the SSRF guard: which addresses toolpin may connect to.

Pure standard library (no HTTP stack), so a light client can use the same guard
(:mod:`toolpin.evidence.fetch` on its plain path); :mod:`toolpin.probe.ssrf` re-exports
every name and documents the rules.
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


class GuardError(ProbeError):
    """The SSRF guard refused a URL or an address (fixed text; no server text)."""


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
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
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


def precheck_target(host: str, port: int, policy: AddressPolicy) -> None:
    """Check a target that a proxy will connect to (see the module docs). Raises
    GuardError for a refused address; a name that does not resolve here passes."""
    literal = host.strip("[]")
    try:
        ipaddress.ip_address(literal)
    except ValueError:
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return  # resolved by the proxy, on its network
    resolve_checked(host, port, policy)


__all__ = [
    "AddressPolicy",
    "GuardError",
    "IPAddress",
    "IPNetwork",
    "address_class",
    "precheck_target",
    "resolve_checked",
]
