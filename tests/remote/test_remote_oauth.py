"""``toolpin run --url`` in front of an OAuth-protected server built with the SDK's server
auth support; the browser step is scripted (``TOOLPIN_BROWSER``), the redirect reaches
toolpin's loopback listener, the SDK ``Client`` is on the stdio side."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import anyio
from mcp import Client

from tests.remote.helpers import audit_events, browser_env, only_pin, through_toolpin
from tests.remote.http_servers import bound_socket, serve_asgi
from tests.remote.oauth_server import Provider, protected_server
from tests.remote.test_remote_hostile import refusal


async def use(params: object, mode: str = "auto") -> None:
    async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
        assert client.instructions == "Sign in first."
        assert [t.name for t in (await client.list_tools()).tools] == ["secret_sum"]
        result = await client.call_tool("secret_sum", {"a": 40, "b": 2})
        assert "42" in str(result.content)


def test_oauth_browser_step_then_stored_tokens(toolpin_home: Path, tmp_path: Path) -> None:
    record = tmp_path / "browser.txt"
    stderr = tmp_path / "stderr.txt"
    provider = Provider()
    sock, base = bound_socket()
    app = protected_server(base, provider)
    with serve_asgi(app.streamable_http_app(), sock):
        params = through_toolpin(toolpin_home, f"{base}/mcp", stderr=stderr, **browser_env(record))
        anyio.run(use, params, "auto")
        opened = record.read_text().splitlines()
        assert len(opened) == 1
        assert opened[0].startswith(f"{base}/authorize?")
        assert "code_challenge_method=S256" in opened[0]
        assert "redirect_uri=http%3A%2F%2F127.0.0.1%3A" in opened[0]
        assert provider.registrations == 1  # dynamic client registration
        # A second session, in the other era, uses the stored token: no browser.
        anyio.run(use, params, "legacy")
        assert len(record.read_text().splitlines()) == 1
    token_files = list((toolpin_home / "oauth").glob("*.json"))
    assert len(token_files) == 1
    assert stat.S_IMODE(token_files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE((toolpin_home / "oauth").stat().st_mode) == 0o700
    stored = json.loads(token_files[0].read_text())
    access = stored["tokens"]["access_token"]
    refresh = stored["tokens"]["refresh_token"]
    assert access in provider.access
    # Tokens are never part of a pin, the audit log or anything toolpin printed.
    for path in [*(toolpin_home / "pins").glob("*.json"), toolpin_home / "audit.log", stderr]:
        text = path.read_text()
        assert access not in text
        assert refresh not in text
    assert audit_events(toolpin_home) == ["pin"]
    assert only_pin(toolpin_home)["label"] == "127.0.0.1/mcp"


def test_an_expired_token_is_refreshed_without_the_browser(
    toolpin_home: Path, tmp_path: Path
) -> None:
    record = tmp_path / "browser.txt"
    provider = Provider()
    sock, base = bound_socket()
    app = protected_server(base, provider)
    with serve_asgi(app.streamable_http_app(), sock):
        params = through_toolpin(toolpin_home, f"{base}/mcp", **browser_env(record))
        anyio.run(use, params, "legacy")
        assert len(record.read_text().splitlines()) == 1
        # The access token expires (on the server and in toolpin's record of it).
        for token in provider.access.values():
            token.expires_at = int(time.time()) - 60
        stored = next((toolpin_home / "oauth").glob("*.json"))
        data = json.loads(stored.read_text())
        data["expiresAt"] = time.time() - 60
        stored.write_text(json.dumps(data))
        anyio.run(use, params, "legacy")
    assert len(record.read_text().splitlines()) == 1
    assert provider.refreshes >= 1
    assert provider.registrations == 1


def test_a_static_authorization_header_is_used_and_no_flow_starts(
    toolpin_home: Path, tmp_path: Path
) -> None:
    record = tmp_path / "browser.txt"
    provider = Provider()
    sock, base = bound_socket()
    app = protected_server(base, provider)
    with serve_asgi(app.streamable_http_app(), sock):
        # A wrong static token: the server refuses it and toolpin starts no browser flow.
        params = through_toolpin(
            toolpin_home,
            f"{base}/mcp",
            "--header",
            "Authorization: Bearer ${env:MY_TOKEN}",
            MY_TOKEN="not-a-token",
            **browser_env(record),
        )

        error = anyio.run(refusal, params)
        assert "refused the credentials (HTTP 401)" in error.error.message
        assert "not-a-token" not in error.error.message
    assert not record.exists()
    assert not (toolpin_home / "oauth").exists()
    assert audit_events(toolpin_home) == []
