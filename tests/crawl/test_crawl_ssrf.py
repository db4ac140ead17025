"""The SSRF guard: address classes, URL checks, refusals before any connection, redirects
re-checked, and an allowed loopback server reached only with the allowance."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from crawl_helpers import FakeAPI, json_reply, sdk_http_server

from toolpin.probe.http import probe_http
from toolpin.probe.ssrf import (
    AddressPolicy,
    GuardError,
    address_class,
    check_url,
    resolve_checked,
)

LOOPBACK_ONLY = AddressPolicy(allowed_networks=(ipaddress.ip_network("127.0.0.2/32"),))


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("8.8.8.8", None),
        ("2606:4700:4700::1111", None),
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "CGNAT"),
        ("169.254.169.254", "cloud metadata"),
        ("169.254.1.1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("192.0.2.5", "reserved"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fe80::1", "link-local"),
        ("fc00::1", "unique-local"),
        ("fd12:3456::1", "unique-local"),
        ("fd00:ec2::254", "cloud metadata"),
        ("ff02::1", "multicast"),
        ("::ffff:10.0.0.1", "IPv4-embedded private"),
        ("::ffff:127.0.0.1", "IPv4-embedded loopback"),
        ("::ffff:8.8.8.8", None),
        ("2002:7f00:1::", "IPv4-embedded loopback"),
        ("64:ff9b::a9fe:a9fe", "IPv4-embedded cloud metadata"),
    ],
)
def test_address_classes(address: str, expected: str | None) -> None:
    assert address_class(ipaddress.ip_address(address)) == expected


def test_allow_private_never_opens_metadata_or_link_local() -> None:
    policy = AddressPolicy(allow_private=True)
    for allowed in ("127.0.0.1", "10.0.0.1", "100.64.1.1", "fd00::1", "::1"):
        assert policy.refusal(ipaddress.ip_address(allowed)) is None
    for refused in ("169.254.169.254", "fe80::1", "224.0.0.1", "0.0.0.0", "::ffff:169.254.169.254"):
        assert policy.refusal(ipaddress.ip_address(refused)) is not None


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://example.com/mcp", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("http://user:secret@example.com/mcp", "credentials"),
        ("http://:x@example.com/", "credentials"),
        ("http:///nohost", "no host"),
        ("https://example.com/" + "a" * 3000, "longer than"),
    ],
)
def test_url_forms_refused(url: str, reason: str) -> None:
    with pytest.raises(GuardError, match=reason):
        check_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/mcp",
        "http://10.255.255.254:8080/mcp",
        "http://[::1]:9/mcp",
        "http://127.0.0.1:9/mcp",
        "http://localhost:9/mcp",
        "http://[::ffff:127.0.0.1]:9/mcp",
        "http://0.0.0.0:9/mcp",
    ],
)
def test_private_targets_refused_before_connecting(url: str) -> None:
    with pytest.raises(GuardError, match="SSRF guard"):
        probe_http(url, timeout=5)


def test_resolution_checks_every_address() -> None:
    with pytest.raises(GuardError, match="loopback"):
        resolve_checked("localhost", 80, AddressPolicy())
    assert resolve_checked("localhost", 80, AddressPolicy(allow_private=True)) in (
        "127.0.0.1",
        "::1",
    )
    with pytest.raises(GuardError, match="does not resolve"):
        resolve_checked("no-such-host.invalid", 80, AddressPolicy())


def test_sdk_server_on_loopback_needs_the_allowance() -> None:
    with sdk_http_server() as url:
        with pytest.raises(GuardError, match="loopback"):
            probe_http(url, timeout=10)
        result = probe_http(url, policy=AddressPolicy(allow_private=True), timeout=10)
        assert result.snapshot.counts()["tools"] == 2


def _loopback_two_available() -> bool:
    try:
        with socket.socket() as sock:
            sock.bind(("127.0.0.2", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _loopback_two_available(), reason="127.0.0.2 is not a local address")
def test_a_redirect_to_loopback_is_refused() -> None:
    """An allowed server (127.0.0.2, explicitly allowed) redirects to 127.0.0.1: refused."""
    target = FakeAPI().start()
    target.routes["/mcp"] = lambda seen: json_reply({"jsonrpc": "2.0", "id": 1, "result": {}})
    front = FakeAPI(host="127.0.0.2").start()
    front.routes["/mcp"] = lambda seen: (307, {"Location": f"{target.url}/mcp"}, b"")
    front.routes["/loop"] = lambda seen: (308, {"Location": "/loop"}, b"")
    try:
        with pytest.raises(GuardError, match="loopback"):
            probe_http(f"{front.url}/mcp", policy=LOOPBACK_ONLY, timeout=5)
        assert target.seen == []  # never reached
        assert [s.path for s in front.seen] == ["/mcp"]
        with pytest.raises(GuardError, match="more than 3 redirects"):
            probe_http(f"{front.url}/loop", policy=LOOPBACK_ONLY, timeout=5)
        assert len(front.requests_to("/loop")) == 4
        front.routes["/creds"] = lambda seen: (302, {"Location": "http://u:p@127.0.0.2/"}, b"")
        with pytest.raises(GuardError, match="credentials"):
            probe_http(f"{front.url}/creds", policy=LOOPBACK_ONLY, timeout=5)
    finally:
        front.stop()
        target.stop()


def test_environment_proxies_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy would connect on the crawler's behalf, unchecked: the guard never uses one."""
    proxy = FakeAPI().start()
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("ALL_PROXY", proxy.url)
    try:
        with pytest.raises(GuardError):
            probe_http("http://10.0.0.1/mcp", timeout=5)
        assert proxy.seen == []
    finally:
        proxy.stop()


@pytest.mark.skipif(not _loopback_two_available(), reason="127.0.0.2 is not a local address")
def test_the_connection_goes_to_the_checked_address(monkeypatch: pytest.MonkeyPatch) -> None:
    """The name is resolved once per connection, inside the HTTP stack, and the socket is
    opened to that checked address (Host still names the server)."""
    server = FakeAPI(host="127.0.0.2").start()
    server.routes["/mcp"] = lambda seen: (401, {}, b"")
    real = socket.getaddrinfo
    answers = {"rebind.test": ["127.0.0.2"], "mixed.test": ["127.0.0.2", "127.0.0.1"]}

    def fake_getaddrinfo(
        host: str | bytes, port: object, *args: object, **kw: object
    ) -> list[object]:
        name = host.decode("ascii") if isinstance(host, bytes) else host  # the guard sends bytes
        if name in answers:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port)) for ip in answers[name]]
        return real(host, port, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo)
    try:
        with pytest.raises(Exception, match="requires authorization"):
            probe_http(f"http://rebind.test:{server.port}/mcp", policy=LOOPBACK_ONLY, timeout=5)
        assert server.seen[0].headers["host"] == f"rebind.test:{server.port}"
        count = len(server.seen)
        with pytest.raises(GuardError, match="loopback"):
            probe_http(f"http://mixed.test:{server.port}/mcp", policy=LOOPBACK_ONLY, timeout=5)
        assert len(server.seen) == count
    finally:
        server.stop()
