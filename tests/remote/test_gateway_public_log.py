"""``toolpin gateway --log URL --vkey FILE [--require-public]``: the gateway consults the
public log as ``toolpin run --url`` does (a real log served on loopback, a real SDK server
behind the gateway, the SDK ``Client`` speaking HTTP to it)."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
from mcp import Client, MCPError

from tests.proxy.harness import proxy_env
from tests.remote.helpers import audit_events
from tests.remote.http_servers import serve_asgi
from tests.remote.test_remote_public_log import LOOPBACK, publish, remote_snapshot
from tests.remote.test_remote_sdk import sdk_server
from tests.site.site_helpers import ORIGIN, serve


@contextmanager
def gateway(home: Path, url: str, stderr: Path, *options: str) -> Iterator[str]:
    """``toolpin gateway --listen 127.0.0.1:0 --url URL OPTIONS``, its stderr to a file."""
    argv = [sys.executable, "-m", "toolpin", "gateway", "--listen", "127.0.0.1:0", *options]
    with stderr.open("wb") as sink:
        process = subprocess.Popen(
            [*argv, "--url", url],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=sink,
            env=proxy_env(home, **LOOPBACK),
        )
        try:
            for _ in range(400):
                said = stderr.read_text(encoding="utf-8")
                if " at http://" in said or process.poll() is not None:
                    break
                anyio.run(anyio.sleep, 0.05)
            line = next(x for x in said.splitlines() if x.startswith("toolpin: gateway for "))
            yield line.rsplit(" at ", 1)[1].strip()
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(20) == 0


async def _tools(endpoint: str) -> list[str]:
    async with Client(endpoint, mode="legacy") as client:
        return [t.name for t in (await client.list_tools()).tools]


async def _refused(endpoint: str) -> int:
    try:
        async with Client(endpoint, mode="legacy") as client:
            await client.list_tools()
    except MCPError as exc:
        return exc.error.code
    except BaseExceptionGroup as group:
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup):
            leaf = leaf.exceptions[0]
        assert isinstance(leaf, MCPError), leaf
        return leaf.error.code
    raise AssertionError("the client was not refused")


def test_the_gateway_says_what_the_log_recorded(toolpin_home: Path, tmp_path: Path) -> None:
    with serve_asgi(sdk_server().streamable_http_app()) as base:
        url = f"{base}/mcp"
        snap = remote_snapshot(tmp_path / "scratch", url)
        site, vkey = publish(tmp_path / "pub", snap)
        server, log_url = serve(site)
        stderr = tmp_path / "gateway.txt"
        try:
            options = ("--log", log_url, "--vkey", str(vkey), "--require-public")
            with gateway(toolpin_home, url, stderr, *options) as endpoint:
                assert anyio.run(_tools, endpoint) == ["add"]
            said = stderr.read_text(encoding="utf-8")
            assert "publicly recorded since 2026-11-21 (entry 0, verified against" in said
            assert f"checkpoint 1 of {ORIGIN})" in said
            assert audit_events(toolpin_home) == ["pin"]
        finally:
            server.shutdown()
            server.server_close()


def test_the_gateway_refuses_what_the_log_never_recorded_under_require_public(
    toolpin_home: Path, tmp_path: Path
) -> None:
    site, vkey = publish(tmp_path / "pub", None)
    server, log_url = serve(site)
    try:
        with serve_asgi(sdk_server().streamable_http_app()) as base:
            options = ("--log", log_url, "--vkey", str(vkey), "--require-public")
            with gateway(toolpin_home, f"{base}/mcp", tmp_path / "gw.txt", *options) as endpoint:
                assert anyio.run(_refused, endpoint) == -31043
        said = (tmp_path / "gw.txt").read_text(encoding="utf-8")
        assert "require-public" in said and ORIGIN in said
        assert audit_events(toolpin_home) == []  # nothing was pinned
    finally:
        server.shutdown()
        server.server_close()


def test_a_gateway_with_an_unusable_log_setting_does_not_start(
    toolpin_home: Path, tmp_path: Path
) -> None:
    argv = [sys.executable, "-m", "toolpin", "gateway", "--listen", "127.0.0.1:0"]
    for options, why in [
        (["--log", "http://127.0.0.1:9/"], "--log and --vkey go together"),
        (["--log", "http://127.0.0.1:9/", "--vkey", str(tmp_path / "none.vkey")], "cannot read"),
        (["--require-public"], "require-public needs a log"),
    ]:
        done = subprocess.run(
            [*argv, "--url", "https://example.com/mcp", *options],
            env=proxy_env(toolpin_home),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("toolpin: ") and why in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
