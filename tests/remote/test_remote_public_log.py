"""``toolpin run --url URL --log ... --vkey ...``: a remote server's first pin checked
against a real public log (crawler record code, ``toolpin.site.build``, loopback), with a
real SDK server over Streamable HTTP and the SDK ``Client`` on toolpin's stdio side."""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp import Client

from tests.remote.helpers import audit_events, through_toolpin
from tests.remote.http_servers import serve_asgi
from tests.remote.test_remote_sdk import connect_error, sdk_server
from tests.site.site_helpers import NOW, ORIGIN, LogWriter, serve
from toolpin.core.snapshot import Snapshot
from toolpin.crawl.candidates import Candidate, crawl_id
from toolpin.crawl.record import Observation, definitions_blob, observation_record
from toolpin.pins.store import PinRecord, PinStore
from toolpin.publog.entries import encode_entry
from toolpin.publog.note import Verifier
from toolpin.site.build import build_site, parse_now

LOOPBACK = {"TOOLPIN_LOG_ALLOW_PRIVATE": "1"}


def publish(root: Path, snap: Snapshot | None) -> tuple[Path, Path]:
    """A site whose log recorded ``snap`` (or only an unrelated server); its vkey file."""
    writer = LogWriter(root / "log")
    if snap is None:
        writer.observe("unrelated", [{"name": "ping", "inputSchema": {"type": "object"}}], NOW)
    else:
        cand = Candidate(
            id=crawl_id("registry", "remote"), name="remote", source="registry", transport="http"
        )
        obs = Observation(
            snapshot=snap,
            era="handshake",
            protocol_version="2025-11-25",
            observed_at="2026-11-21T03:00:00Z",
        )
        entry = observation_record(
            cand, obs, previous=None, blob=writer.blobs.put(definitions_blob(snap))
        )
        writer.pending.append(encode_entry(entry))
    writer.commit()
    build_site(root / "log", Verifier.from_text(writer.vkey), root / "out", now=parse_now(NOW))
    (root / "log.vkey").write_text(writer.vkey + "\n", encoding="utf-8")
    return root / "out", root / "log.vkey"


def remote_snapshot(home: Path, url: str) -> Snapshot:
    """The snapshot toolpin takes of the remote server (pinned in a scratch store)."""

    async def session() -> None:
        async with Client(through_toolpin(home, url), mode="legacy") as client:
            await client.list_tools()

    anyio.run(session)
    (record,) = PinStore(home).all()
    assert isinstance(record, PinRecord)
    return record.snapshot


def test_a_remote_first_pin_says_what_the_log_recorded(toolpin_home: Path, tmp_path: Path) -> None:
    with serve_asgi(sdk_server().streamable_http_app()) as base:
        url = f"{base}/mcp"
        snap = remote_snapshot(tmp_path / "scratch", url)
        site, vkey = publish(tmp_path / "pub", snap)
        server, log_url = serve(site)
        try:
            options = ("--log", log_url, "--vkey", str(vkey), "--require-public")
            stderr = tmp_path / "stderr.txt"

            async def session() -> None:
                params = through_toolpin(toolpin_home, url, *options, stderr=stderr, **LOOPBACK)
                async with Client(params, mode="legacy") as client:
                    assert [t.name for t in (await client.list_tools()).tools] == ["add"]

            anyio.run(session)
            said = stderr.read_text(encoding="utf-8")
            assert "publicly recorded since 2026-11-21 (entry 0, verified against" in said
            assert f"checkpoint 1 of {ORIGIN})" in said
            assert audit_events(toolpin_home) == ["pin"]
        finally:
            server.shutdown()
            server.server_close()


def test_a_remote_surface_the_log_never_recorded_is_refused_under_require_public(
    toolpin_home: Path, tmp_path: Path
) -> None:
    site, vkey = publish(tmp_path / "pub", None)
    server, log_url = serve(site)
    try:
        with serve_asgi(sdk_server().streamable_http_app()) as base:
            options = ("--log", log_url, "--vkey", str(vkey), "--require-public")
            params = through_toolpin(toolpin_home, f"{base}/mcp", *options, **LOOPBACK)
            error = anyio.run(connect_error, params)
        assert error.code == -31043
        assert "require-public" in str(error) and ORIGIN in str(error)
        assert audit_events(toolpin_home) == []  # nothing was pinned
    finally:
        server.shutdown()
        server.server_close()
