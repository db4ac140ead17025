"""``toolpin run --url``'s settings: URL rules, headers with ``${env:VAR}``, the server id
(name + origin + path, never headers or query), and what the start path imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.proxy.harness import proxy_env
from toolpin.core.wire import identity_url
from toolpin.errors import InputError
from toolpin.pins.serverid import remote_server_id, server_id
from toolpin.remote.target import make_target, parse_header


def test_the_id_is_name_origin_and_path_only() -> None:
    base = remote_server_id("https://Example.COM/mcp", "docs")
    assert remote_server_id("https://example.com:443/mcp?token=abc", "docs") == base
    assert remote_server_id("https://example.com/mcp", "other") != base
    assert remote_server_id("https://example.com/mcp/", "docs") != base
    assert remote_server_id("https://example.com:8443/mcp", "docs") != base
    assert remote_server_id("http://example.com/mcp", "docs") != base
    # Never the id of a local command line.
    assert base != server_id(["https://example.com/mcp"])
    assert identity_url("https://[::1]:8000/a?b#c") == "https://[::1]:8000/a"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://example.com/mcp", "https://"),
        ("https://user:pw@example.com/mcp", "credentials"),
        ("http://example.com/mcp", "plain http"),
        ("https:///mcp", "no host"),
        ("https://example.com:99999/mcp", "cannot be parsed"),
        ("https://example.com/mcp#x", "fragment"),
    ],
)
def test_unusable_urls_are_refused(url: str, why: str) -> None:
    with pytest.raises(InputError) as caught:
        make_target(url)
    assert why in caught.value.message


def test_plain_http_only_for_loopback() -> None:
    for url in ("http://127.0.0.1:3000/mcp", "http://localhost/mcp", "http://[::1]:1/mcp"):
        assert make_target(url).url == url


def test_headers_expand_env_and_never_show_their_values() -> None:
    env = {"TOKEN": "s3cret"}
    assert parse_header("Authorization: Bearer ${env:TOKEN}", env) == (
        "Authorization",
        "Bearer s3cret",
    )
    assert parse_header("X-Key: ${TOKEN}", env) == ("X-Key", "s3cret")
    with pytest.raises(InputError) as missing:
        parse_header("X-Key: ${env:NOPE}", env)
    assert "NOPE" in missing.value.message
    for bad in ("no colon", "Bad Name: x", "Mcp-Session-Id: x", "X: a\x00b"):
        with pytest.raises(InputError) as caught:
            parse_header(bad, env)
        assert "s3cret" not in caught.value.diagnostics()
    target = make_target("https://example.com/mcp", headers=["X-Key: ${TOKEN}"], environ=env)
    assert "s3cret" not in repr(target)


def _imported(home: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "toolpin", "run", *args],
        capture_output=True,
        text=True,
        env=proxy_env(home),
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    return done.stderr


def test_the_stdio_start_path_imports_no_http_or_sdk(toolpin_home: Path) -> None:
    log = _imported(toolpin_home, "--", sys.executable, "-c", "pass")
    names = {line.split("|")[-1].strip().split(".")[0] for line in log.splitlines() if "|" in line}
    assert not names & {"httpx2", "httpcore2", "mcp", "pydantic", "click", "rich"}


def test_the_url_start_path_imports_no_sdk(toolpin_home: Path) -> None:
    # Nothing listens on port 9; the proxy refuses the client's (absent) requests and ends.
    log = _imported(toolpin_home, "--timeout", "1", "--url", "http://127.0.0.1:9/mcp")
    names = {line.split("|")[-1].strip().split(".")[0] for line in log.splitlines() if "|" in line}
    assert "httpx2" in names
    assert not names & {"mcp", "pydantic", "click", "rich"}


def test_the_oauth_flow_guard() -> None:
    from toolpin.probe.ssrf import GuardError, resolve_checked
    from toolpin.remote.oauth import AuthError, check_flow_url, flow_policy

    check_flow_url("https://auth.example.com/token")
    check_flow_url("http://127.0.0.1:9000/token")
    for bad in ("http://auth.example.com/token", "javascript:alert(1)", "file:///etc/passwd"):
        with pytest.raises(AuthError):
            check_flow_url(bad)
    public = flow_policy("https://mcp.example.com/mcp")
    local = flow_policy("http://127.0.0.1:8000/mcp")
    # A public server's flow never reaches this machine or its network...
    for address in ("127.0.0.1", "10.0.0.5", "169.254.169.254"):
        with pytest.raises(GuardError):
            resolve_checked(address, 443, public)
    # ...a local server's may, but never the cloud metadata address.
    assert resolve_checked("127.0.0.1", 443, local) == "127.0.0.1"
    with pytest.raises(GuardError):
        resolve_checked("169.254.169.254", 80, local)


def test_tokens_are_kept_per_origin_and_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolpin.remote.oauth import token_path

    monkeypatch.setenv("TOOLPIN_HOME", str(tmp_path))
    a = token_path("https://mcp.example.com/mcp?x=1")
    assert a == token_path("https://MCP.example.com:443/mcp")
    assert a != token_path("https://mcp.example.com/other")
    assert a.parent == tmp_path / "oauth"
