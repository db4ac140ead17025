"""Remote servers through the machine's proxy set-up: ``HTTPS_PROXY``/``HTTP_PROXY``/
``NO_PROXY`` and ``SSL_CERT_FILE`` for ``toolpin run --url`` (the SDK ``Client`` on the
stdio side) and ``toolpin lock``, with a loopback proxy that records it was used; the SSRF
guard still checks the target before the proxy is asked."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.server.transport_security import TransportSecuritySettings

from tests.packages.registry_support import make_ca
from tests.proxy.harness import run_cli
from tests.remote.forward_proxy import loopback_proxy
from tests.remote.helpers import through_toolpin
from tests.remote.http_servers import bound_socket, serve_asgi
from tests.remote.test_remote_hostile import refusal
from tests.remote.test_remote_sdk import sdk_server

UNVERIFIED = -31043
NAME = "mcp.test"  # reserved: it never resolves here; the proxy knows it


def proxy_vars(**wanted: str) -> dict[str, str]:
    """The proxy variables ``wanted``, every other one cleared (an empty lower-case
    variable clears both spellings, as Python's ``getproxies`` reads them)."""
    names = ("https_proxy", "http_proxy", "all_proxy", "no_proxy")
    env = dict.fromkeys(names, "")
    for name, value in wanted.items():
        env.pop(name.lower(), None)
        env[name] = value
    return env


async def tools(params: object, mode: str) -> list[str]:
    async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
        return [t.name for t in (await client.list_tools()).tools]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_https_through_a_connect_proxy_with_the_ca_of_ssl_cert_file(
    toolpin_home: Path, tmp_path: Path, mode: str
) -> None:
    ca, cert, key = make_ca(tmp_path, (NAME,))
    sock, _ = bound_socket()
    port = sock.getsockname()[1]
    url = f"https://{NAME}:{port}/mcp"
    with (
        serve_asgi(
            sdk_server("tls").streamable_http_app(
                transport_security=TransportSecuritySettings(allowed_hosts=[f"{NAME}:{port}"])
            ),
            sock,
            tls=(str(cert), str(key)),
        ),
        loopback_proxy({NAME: "127.0.0.1"}) as proxy,
    ):
        env = proxy_vars(HTTPS_PROXY=proxy.url) | {"SSL_CERT_FILE": str(ca), "SSL_CERT_DIR": ""}
        assert anyio.run(tools, through_toolpin(toolpin_home, url, **env), mode) == ["add"]
        assert ("CONNECT", f"{NAME}:{port}") in proxy.requests
        # The lock's probe goes the same way.
        config = tmp_path / ".mcp.json"
        config.write_text(json.dumps({"mcpServers": {"docs": {"type": "http", "url": url}}}))
        done = run_cli(
            toolpin_home, "lock", "--config", str(config), "--out", str(tmp_path / "l"), **env
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "docs: locked (1 tool, remote)" in done.stdout
        assert proxy.requests.count(("CONNECT", f"{NAME}:{port}")) >= 2
        # With another CA the tunnel is made but the server's certificate is refused.
        (tmp_path / "other").mkdir()
        env["SSL_CERT_FILE"] = str(make_ca(tmp_path / "other")[0])
        bad = run_cli(
            toolpin_home, "lock", "--config", str(config), "--out", str(tmp_path / "l"), **env
        )
        assert bad.returncode == 1
        assert "docs: cannot connect to the server" in bad.stdout


def test_a_forward_proxy_and_no_proxy(toolpin_home: Path, tmp_path: Path) -> None:
    with serve_asgi(sdk_server("plain").streamable_http_app()) as base, loopback_proxy() as proxy:
        url = f"{base}/mcp"
        config = tmp_path / ".mcp.json"
        config.write_text(json.dumps({"mcpServers": {"docs": {"type": "http", "url": url}}}))

        def lock(**env: str) -> str:
            done = run_cli(
                toolpin_home,
                "lock",
                "--config",
                str(config),
                "--out",
                str(tmp_path / "l"),
                **proxy_vars(**env),
            )
            assert done.returncode == 0, done.stdout + done.stderr
            return done.stdout

        lock(HTTP_PROXY=proxy.url.replace("http://", "http://me:p%40ss@"))
        forwarded = [t for m, t in proxy.requests if m == "POST"]
        assert forwarded and all(t == url for t in forwarded)  # absolute-form, as proxies get
        basic = "Basic " + base64.b64encode(b"me:p@ss").decode()
        assert all(h.get("proxy-authorization") == basic for h in proxy.headers)
        count = len(proxy.requests)
        lock(HTTP_PROXY=proxy.url, NO_PROXY="127.0.0.1")
        lock(http_proxy=proxy.url, no_proxy="*")
        assert len(proxy.requests) == count  # NO_PROXY: direct
        params = through_toolpin(toolpin_home, url, **proxy_vars(HTTP_PROXY=proxy.url))
        assert anyio.run(tools, params, "auto") == ["add"]
        assert len(proxy.requests) > count


def test_the_guard_checks_the_target_before_the_proxy_is_asked(
    toolpin_home: Path, tmp_path: Path
) -> None:
    with loopback_proxy() as proxy:
        env = proxy_vars(HTTPS_PROXY=proxy.url, HTTP_PROXY=proxy.url)
        metadata = "http://169.254.169.254/mcp"
        config = tmp_path / ".mcp.json"
        config.write_text(json.dumps({"mcpServers": {"meta": {"type": "http", "url": metadata}}}))
        done = run_cli(
            toolpin_home, "lock", "--config", str(config), "--out", str(tmp_path / "l"), **env
        )
        assert done.returncode != 0
        assert "refused to connect to a cloud metadata address (SSRF guard)" in done.stdout
        error = anyio.run(refusal, through_toolpin(toolpin_home, "https://[fe80::1]/mcp", **env))
        assert error.error.code == UNVERIFIED
        assert proxy.requests == []


def test_a_socks_proxy_is_refused_in_one_line(toolpin_home: Path, tmp_path: Path) -> None:
    config = tmp_path / ".mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"docs": {"type": "http", "url": "https://mcp.test/mcp"}}})
    )
    env = proxy_vars(ALL_PROXY="socks5://127.0.0.1:9")
    done = run_cli(
        toolpin_home, "lock", "--config", str(config), "--out", str(tmp_path / "l"), **env
    )
    assert done.returncode != 0
    assert "is not an http:// or https:// proxy; toolpin supports only those" in done.stdout
    assert "Traceback" not in done.stderr
