"""``toolpin lock --log URL --vkey FILE`` and ``lock --check --log ...``: each server's
locked definitions looked up in a real public log (written with the crawler's record
code, built by ``toolpin.site.build``, served on loopback)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from teamlock_support import Project, Servers, entry
from tests.site.site_helpers import NOW, ORIGIN, LogWriter, serve, signer

from toolpin.core.snapshot import Snapshot
from toolpin.crawl.candidates import Candidate, crawl_id
from toolpin.crawl.record import Observation, definitions_blob, observation_record
from toolpin.lockfile.native import read_lock
from toolpin.publog.entries import encode_entry
from toolpin.publog.note import Verifier
from toolpin.site.build import build_site, parse_now


@contextlib.contextmanager
def publish(root: Path, recorded: dict[str, Snapshot]) -> Iterator[tuple[str, Path]]:
    """A log recording each snapshot (as ``toolpin log crawl`` would), its site served."""
    writer = LogWriter(root / "log")
    for name, snap in recorded.items():
        cand = Candidate(
            id=crawl_id("registry", name), name=name, source="registry", transport="stdio"
        )
        obs = Observation(
            snapshot=snap,
            era="handshake",
            protocol_version="2025-06-18",
            observed_at="2026-11-20T03:00:00Z",
        )
        record = observation_record(
            cand, obs, previous=None, blob=writer.blobs.put(definitions_blob(snap))
        )
        writer.pending.append(encode_entry(record))
    writer.commit()
    build_site(root / "log", Verifier.from_text(writer.vkey), root / "out", now=parse_now(NOW))
    key = root / "log.vkey"
    key.write_text(writer.vkey + "\n", encoding="utf-8")
    server, url = serve(root / "out")
    try:
        yield url, key
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLPIN_LOG_ALLOW_PRIVATE", "1")


def test_lock_check_says_which_locked_definitions_the_log_recorded(
    project: Project, servers: Servers, tmp_path: Path, loopback: None
) -> None:
    project.write_config(
        {
            "notes": entry(servers.command("notes", instructions="Use search first.")),
            "mine": entry(servers.command("mine", tools=[{"name": "only_here"}])),
        }
    )
    assert project.toolpin("lock").code == 0
    locked = read_lock(project.lock_path).servers
    with publish(tmp_path / "pub", {"notes": locked["notes"].snapshot}) as (url, key):
        checked = project.toolpin("lock", "--check", "--log", url, "--vkey", str(key))
        assert checked.code == 0, checked.err
        lines = checked.out.splitlines()
        notes = lines.index("notes: matches the lock")
        assert lines[notes + 1].startswith(
            "  log: the locked definitions are publicly recorded since 2026-11-20 (entry 0"
        )
        mine = lines.index("mine: matches the lock")
        assert lines[mine + 1] == (
            f"  log: the locked definitions were never recorded in {ORIGIN} "
            "(checked against checkpoint 1)"
        )

        as_json = project.toolpin("lock", "--check", "--json", "--log", url, "--vkey", str(key))
        doc = {s["name"]: s for s in json.loads(as_json.out)["servers"]}
        assert doc["notes"]["log"]["status"] == "recorded"
        assert doc["notes"]["log"]["digest"] == locked["notes"].snapshot.surface_hash()
        assert doc["mine"]["log"]["status"] == "never-recorded"

        written = project.toolpin("lock", "--log", url, "--vkey", str(key))
        assert written.code == 0
        assert "  log: the locked definitions are publicly recorded since 2026-11-20" in (
            written.out
        )


def test_lock_check_with_an_unreachable_log_still_checks(
    project: Project, servers: Servers, tmp_path: Path, loopback: None
) -> None:
    project.write_config({"notes": entry(servers.command("notes"))})
    assert project.toolpin("lock").code == 0
    key = tmp_path / "some.vkey"
    key.write_text(signer().verifier.text + "\n", encoding="utf-8")
    checked = project.toolpin("lock", "--check", "--log", "http://127.0.0.1:9/", "--vkey", str(key))
    assert checked.code == 0, checked.err
    assert "notes: matches the lock" in checked.out
    assert "  log: the public log at http://127.0.0.1:9/ could not be checked" in checked.out
