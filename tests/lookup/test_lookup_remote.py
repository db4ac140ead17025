"""A log served at a URL: mirrored under the SSRF guard with caps, cached, verified like a
directory; a tampered or unreachable remote log answers nothing."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.lookup.conftest import PYTHON, WEATHER, lookup_env
from tests.lookup.lookup_helpers import LogBuilder
from toolpin.lookup.source import LogSource, Mirror
from toolpin.publog.note import Verifier


class _Handler(http.server.SimpleHTTPRequestHandler):
    requests: list[str]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        type(self).requests.append(self.path)
        super().do_GET()


@pytest.fixture
def served(weather_log: LogBuilder) -> Iterator[tuple[str, list[str]]]:
    """The log directory on a loopback HTTP server; yields its URL and the request paths."""
    requests: list[str] = []
    handler = type("H", (_Handler,), {"requests": requests})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(weather_log.root))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", requests
    finally:
        server.shutdown()
        server.server_close()


def test_a_remote_log_is_mirrored_verified_and_cached(
    served: tuple[str, list[str]], weather_log: LogBuilder, tmp_path: Path
) -> None:
    url, requests = served
    source = LogSource(
        url, Verifier.from_text(weather_log.vkey), cache_dir=tmp_path / "cache", allow_private=True
    )
    state = source.state()
    assert state.verified and state.kind == "url"
    assert state.checkpoint is not None and state.checkpoint.size == 4
    assert len(state.servers) == 3
    fetched = len(requests)
    assert "/checkpoint" in requests and "/tile/0/000.p/4" in requests
    assert source.state() is state  # answered from the cache within the refresh interval
    assert len(requests) == fetched
    # A new process over the same cache fetches only the checkpoint: the rest is immutable.
    again = LogSource(
        url, Verifier.from_text(weather_log.vkey), cache_dir=tmp_path / "cache", allow_private=True
    )
    assert again.state().verified
    assert requests[fetched:] == ["/checkpoint"]


def test_the_ssrf_guard_refuses_loopback_by_default(
    served: tuple[str, list[str]], weather_log: LogBuilder, tmp_path: Path
) -> None:
    url, requests = served
    source = LogSource(url, Verifier.from_text(weather_log.vkey), cache_dir=tmp_path / "c")
    state = source.state()
    assert state.reason == "unreachable" and not state.servers
    assert requests == []


def test_a_tampered_remote_log_is_not_answered_from(
    served: tuple[str, list[str]], weather_log: LogBuilder, tmp_path: Path
) -> None:
    url, _ = served
    bundle = weather_log.root / "tile" / "entries" / "000.p" / "4"
    data = bytearray(bundle.read_bytes())
    data[-3] ^= 1
    bundle.write_bytes(bytes(data))
    source = LogSource(
        url, Verifier.from_text(weather_log.vkey), cache_dir=tmp_path / "c", allow_private=True
    )
    state = source.state()
    assert state.reason == "unverified" and not state.servers
    assert not list((tmp_path / "c").glob("*/log/tile"))  # the bad mirror was discarded


def test_a_file_over_its_cap_is_refused(
    served: tuple[str, list[str]], weather_log: LogBuilder, tmp_path: Path
) -> None:
    url, _ = served
    (weather_log.root / "checkpoint").write_bytes(b"x" * (2 << 20))
    source = LogSource(
        url, Verifier.from_text(weather_log.vkey), cache_dir=tmp_path / "c", allow_private=True
    )
    assert source.state().reason == "unverified"


def test_mirror_total_budget(
    served: tuple[str, list[str]], weather_log: LogBuilder, tmp_path: Path
) -> None:
    url, _ = served
    mirror = Mirror(url, tmp_path / "m", allow_private=True, max_bytes=600)
    with pytest.raises(Exception, match="larger than the lookup mirrors"):
        mirror.refresh(Verifier.from_text(weather_log.vkey))


def test_lookup_from_a_url_over_stdio(
    served: tuple[str, list[str]], weather_log: LogBuilder, toolpin_home: Path
) -> None:
    url, _ = served
    server = StdioServerParameters(
        command=PYTHON,
        args=[
            "-m",
            "toolpin",
            "lookup",
            "--log",
            url,
            "--vkey",
            weather_log.vkey,
            "--allow-private",
        ],
        env=lookup_env(toolpin_home),
    )

    async def session() -> tuple[dict[str, object], bool | None]:
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            open_world = {t.name: t.annotations.open_world_hint for t in tools}
            result = await client.call_tool("lookup_server", {"server": WEATHER})
            assert result.structured_content is not None
            return result.structured_content, open_world["lookup_server"]

    answer, open_world = anyio.run(session)
    assert open_world is True  # the log tools reach the network
    assert answer["status"] == "found"
    log = answer["log"]
    assert isinstance(log, dict) and log["source"] == "url" and log["status"] == "verified"


def test_a_directory_rolled_back_behind_a_verified_checkpoint_is_refused(
    tmp_path: Path,
) -> None:
    import shutil

    from tests.lookup.lookup_helpers import signer, tool

    builder = LogBuilder(tmp_path / "log", signer())
    builder.observe("a", [tool("x")], "2026-11-01T00:00:00Z")
    builder.observe("b", [tool("y")], "2026-11-02T00:00:00Z")
    shutil.copytree(builder.root, tmp_path / "older")
    builder.observe("a", [tool("x", "changed")], "2026-11-03T00:00:00Z")
    source = LogSource(str(builder.root), signer().verifier)
    assert source.state().verified
    shutil.rmtree(builder.root)
    shutil.copytree(tmp_path / "older", builder.root)
    state = source.state()
    assert state.reason == "unverified" and not state.servers
