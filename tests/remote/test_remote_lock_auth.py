"""``toolpin lock`` / ``lock --check`` list remote servers that need credentials: the
entry's static headers (``${env:VAR}`` filled from the environment, never written into
the lock or any output) and the OAuth tokens ``toolpin login`` / ``toolpin run --url``
stored (refreshed when expired, never a browser from ``lock``). Real SDK servers over
Streamable HTTP on loopback, in both protocol eras."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.proxy.harness import run_cli
from tests.remote.gate import Gate
from tests.remote.helpers import browser_env
from tests.remote.http_servers import bound_socket, serve_asgi
from tests.remote.oauth_server import Provider, protected_server
from tests.remote.test_remote_sdk import sdk_server

ERAS = ["modern", "legacy"]


def lock(home: Path, config: Path, lock: Path, *extra: str, **env: str) -> Any:
    return run_cli(home, "lock", *extra, "--config", str(config), "--out", str(lock), **env)


def write_config(path: Path, entry: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"mcpServers": {"docs": entry}}))
    return path


@pytest.mark.parametrize("era", ERAS)
def test_static_headers_from_the_environment(toolpin_home: Path, tmp_path: Path, era: str) -> None:
    token = "s3cret-token-value"
    gate = Gate(
        sdk_server("bearer").streamable_http_app(),
        token=token,
        team="blue",
        legacy_only=era == "legacy",
    )
    with serve_asgi(gate) as base:
        headers = {"Authorization": "Bearer ${env:DOCS_TOKEN}", "X-Team": "${TEAM}"}
        config = write_config(
            tmp_path / ".mcp.json", {"type": "http", "url": f"{base}/mcp", "headers": headers}
        )
        out = tmp_path / "toolpin.lock"
        done = lock(toolpin_home, config, out, DOCS_TOKEN=token, TEAM="blue")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "docs: locked (1 tool, remote)" in done.stdout
        checked = lock(toolpin_home, config, out, "--check", DOCS_TOKEN=token, TEAM="blue")
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "matches the lock" in checked.stdout
        # A wrong value: the server's 401, in toolpin's words, the value nowhere.
        wrong = lock(toolpin_home, config, out, "--check", DOCS_TOKEN="wrong-value", TEAM="blue")
        assert wrong.returncode != 0
        assert "refused the Authorization header (HTTP 401)" in wrong.stdout
        # An unset variable fails the entry by name, before anything is sent.
        before = len(gate.seen)
        unset = lock(toolpin_home, config, out, "--check", TEAM="blue")
        assert unset.returncode != 0
        assert "names ${env:DOCS_TOKEN}, which is not set" in unset.stdout
        assert len(gate.seen) == before
        for result in (done, checked, wrong, unset):
            assert token not in result.stdout + result.stderr
            assert "wrong-value" not in result.stdout + result.stderr
    text = out.read_text()
    assert token not in text
    assert "DOCS_TOKEN" not in text  # headers are never part of the lock
    sent = [h for h in gate.seen if h.get("authorization") == f"Bearer {token}"]
    assert sent and all(h["x-team"] == "blue" for h in sent)
    if era == "modern":
        assert "server/discover" in gate.methods()
        assert "tools/list" in gate.methods()
    else:  # the handshake era, in a session
        assert any(h.get("mcp-session-id") for h in sent)


def test_a_wrapped_entry_sends_its_header_flags(toolpin_home: Path, tmp_path: Path) -> None:
    gate = Gate(sdk_server("wrapped").streamable_http_app(), token="t0ken")
    with serve_asgi(gate) as base:
        argv = ["run", "--name", "docs", "--url", f"{base}/mcp"]
        argv += ["--header", "Authorization: Bearer ${env:TOKEN}"]
        config = write_config(tmp_path / ".mcp.json", {"command": "toolpin", "args": argv})
        done = lock(toolpin_home, config, tmp_path / "toolpin.lock", TOKEN="t0ken")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "docs: locked (1 tool, remote)" in done.stdout


def test_codex_bearer_token_env_var(toolpin_home: Path, tmp_path: Path) -> None:
    gate = Gate(sdk_server("codex").streamable_http_app(), token="c0dex", team="red")
    with serve_asgi(gate) as base:
        config = tmp_path / "config.toml"
        config.write_text(
            f'[mcp_servers.docs]\nurl = "{base}/mcp"\nbearer_token_env_var = "CODEX_TOKEN"\n'
            '[mcp_servers.docs.env_http_headers]\n"X-Team" = "CODEX_TEAM"\n'
        )
        done = lock(
            toolpin_home, config, tmp_path / "t.lock", CODEX_TOKEN="c0dex", CODEX_TEAM="red"
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "c0dex" not in (tmp_path / "t.lock").read_text()


def test_a_redirect_to_another_origin_never_gets_the_headers(
    toolpin_home: Path, tmp_path: Path
) -> None:
    other = Gate(sdk_server("elsewhere").streamable_http_app())

    async def redirect(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send(
            {
                "type": "http.response.start",
                "status": 307,
                "headers": [(b"location", f"{target}/mcp".encode()), (b"content-length", b"0")],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    with serve_asgi(other) as target, serve_asgi(redirect) as base:
        config = write_config(
            tmp_path / ".mcp.json",
            {"type": "http", "url": f"{base}/mcp", "headers": {"X-Key": "${env:KEY}"}},
        )
        done = lock(toolpin_home, config, tmp_path / "t.lock", KEY="k3y")
        assert done.returncode != 0
        assert "redirected to another origin; refused" in done.stdout
    assert other.seen == []


def oauth_gate(base: str, provider: Provider, era: str) -> Gate:
    return Gate(protected_server(base, provider).streamable_http_app(), legacy_only=era == "legacy")


@pytest.mark.parametrize("era", ERAS)
def test_oauth_tokens_from_login_are_used_and_refreshed(
    toolpin_home: Path, tmp_path: Path, era: str
) -> None:
    record = tmp_path / "browser.txt"
    provider = Provider()
    sock, base = bound_socket()
    gate = oauth_gate(base, provider, era)
    url = f"{base}/mcp"
    config = write_config(tmp_path / ".mcp.json", {"type": "http", "url": url})
    out = tmp_path / "toolpin.lock"
    with serve_asgi(gate, sock):
        # No token yet: the entry fails with the command to run; lock opens no browser.
        first = lock(toolpin_home, config, out, **browser_env(record))
        assert first.returncode != 0
        assert (
            "docs: the server requires authorization (HTTP 401); authorize toolpin once "
            f"with `toolpin login --url {url}`"
        ) in first.stdout
        assert not record.exists()
        # toolpin login: the browser step once, tokens stored.
        login = run_cli(toolpin_home, "login", "--url", url, **browser_env(record))
        assert login.returncode == 0, login.stdout + login.stderr
        assert "toolpin: authorized for" in login.stdout
        assert len(record.read_text().splitlines()) == 1
        again = run_cli(toolpin_home, "login", "--url", url, **browser_env(record))
        assert "already authorized" in again.stdout
        done = lock(toolpin_home, config, out, **browser_env(record))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "docs: locked (1 tool, remote)" in done.stdout
        assert "secret_sum" in out.read_text()
        # The access token expires: lock --check refreshes it, without the browser.
        for token in provider.access.values():
            token.expires_at = int(time.time()) - 60
        stored = next((toolpin_home / "oauth").glob("*.json"))
        data = json.loads(stored.read_text())
        data["expiresAt"] = time.time() - 60
        stored.write_text(json.dumps(data))
        checked = lock(toolpin_home, config, out, "--check", **browser_env(record))
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert provider.refreshes == 1
        assert len(record.read_text().splitlines()) == 1
        # A revoked token (refresh refused too): a clear line, no browser.
        provider.access.clear()
        provider.refresh.clear()
        revoked = lock(toolpin_home, config, out, "--check", **browser_env(record))
        assert revoked.returncode != 0
        assert "authorize toolpin again once with `toolpin login" in revoked.stdout
        assert len(record.read_text().splitlines()) == 1
    tokens = json.loads(stored.read_text())["tokens"]
    for result in (first, login, done, checked, revoked):
        assert tokens["access_token"] not in result.stdout + result.stderr
    assert tokens["access_token"] not in out.read_text()
    assert tokens["refresh_token"] not in out.read_text()
    authorized = [h for h in gate.seen if h.get("authorization", "").startswith("Bearer ")]
    if era == "modern":
        assert any(h.get("mcp-method") == "tools/list" for h in authorized)
    else:
        assert any(h.get("mcp-session-id") for h in authorized)


def test_login_against_a_server_that_does_not_ask(toolpin_home: Path, tmp_path: Path) -> None:
    with serve_asgi(sdk_server("open").streamable_http_app()) as base:
        done = run_cli(toolpin_home, "login", "--url", f"{base}/mcp")
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout == f"toolpin: {base}/mcp did not ask for authorization; nothing stored\n"
        static = run_cli(
            toolpin_home, "login", "--url", f"{base}/mcp", "--header", "Authorization: Bearer x"
        )
        assert static.returncode == 2
        assert "given an Authorization header; nothing to authorize" in static.stderr
        assert "Traceback" not in static.stderr
    assert not (toolpin_home / "oauth").exists()
    gone = run_cli(toolpin_home, "login", "--url", "http://127.0.0.1:9/mcp")
    assert gone.returncode == 2
    assert gone.stderr == "toolpin: cannot reach the server (ConnectError)\n"
