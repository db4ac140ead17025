"""A lookup in two steps (the checkpoint first, the digest later), as the proxy makes it
at a first pin: the same checks and answers as one ``look_up``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from evidence_helpers import Served, entries, site_of
from site_helpers import ORIGIN, LogWriter, tool

from toolpin.evidence import LogProblem, LogRef, NeverRecorded, Recorded, look_up
from toolpin.evidence.lookup import Lookup, bundle_cache
from toolpin.evidence.state import load
from toolpin.pins.publiclog import LogSettings, PublicCheck


@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory) -> tuple[LogWriter, Path, Path]:
    """One log's site at size 2 and the same log's site at size 4."""
    root = tmp_path_factory.mktemp("grown")
    writer = LogWriter(root / "grow")
    writer.observe("a", [tool("one")], "2026-09-01T03:00:00Z")
    writer.observe("b", [tool("two")], "2026-09-01T04:00:00Z")
    writer.commit()
    small = site_of(writer, root / "small")
    writer.observe("c", [tool("three")], "2026-10-01T03:00:00Z")
    writer.observe("a", [tool("one"), tool("four")], "2026-10-02T03:00:00Z")
    writer.commit()
    return writer, small, site_of(writer, root / "big")


def _lookup(served: Served, writer: LogWriter, home: Path) -> Lookup:
    return Lookup(LogRef(served.url, writer.vkey), home=home, allow_private=True)


def test_prepare_fetches_only_the_checkpoint_and_find_gives_look_ups_answer(
    grown: Any, served: Served, tmp_path: Path
) -> None:
    writer, _, big = grown
    served.show(big)
    digest = entries(writer.path)[1]["digests"]["surface"]
    with _lookup(served, writer, tmp_path / "prepared") as lookup:
        lookup.prepare()
        assert served.requests == 1  # the checkpoint, nothing that needs a digest
        assert load(tmp_path / "prepared", ORIGIN).checkpoint == (big / "checkpoint").read_text()
        found = lookup.find(digest)
    assert served.requests > 1
    plain = look_up(
        LogRef(served.url, writer.vkey), digest, home=tmp_path / "one", allow_private=True
    )
    assert found == plain
    assert isinstance(found, Recorded) and found.entry_index == 1 and found.checkpoint_size == 4


def test_a_log_that_grew_after_prepare_is_checked_again(
    grown: Any, served: Served, tmp_path: Path
) -> None:
    """The site is rebuilt between the checkpoint and the digest: the bucket names a
    newer checkpoint, which is fetched and proven consistent before the entry counts."""
    writer, small, big = grown
    home = tmp_path / "home"
    served.show(small)
    digest = entries(writer.path)[3]["digests"]["surface"]
    with _lookup(served, writer, home) as lookup:
        lookup.prepare()
        assert load(home, ORIGIN).checkpoint == (small / "checkpoint").read_text()
        served.show(big)
        found = lookup.find(digest)
    assert isinstance(found, Recorded) and found.entry_index == 3 and found.checkpoint_size == 4
    assert load(home, ORIGIN).checkpoint == (big / "checkpoint").read_text()


def test_a_log_rolled_back_after_prepare_is_distrusted(
    grown: Any, served: Served, tmp_path: Path
) -> None:
    writer, small, big = grown
    home = tmp_path / "home"
    served.show(big)
    with _lookup(served, writer, home) as lookup:
        lookup.prepare()
    served.show(small)
    with _lookup(served, writer, home) as lookup, pytest.raises(LogProblem) as caught:
        lookup.prepare()
    assert caught.value.kind == "rollback"
    with pytest.raises(LogProblem) as again:
        _lookup(served, writer, home)  # refused before anything is fetched
    assert again.value.kind == "distrusted"


def test_an_http_log_never_loads_the_trust_store(
    grown: Any, served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CA setting that cannot be read is an error for an https:// log (the trust store
    is loaded for it), but an http:// log makes no TLS connection and never reads it."""
    writer, _, big = grown
    served.show(big)
    bad = tmp_path / "not-a-ca.pem"
    bad.write_text("not a certificate\n")
    monkeypatch.setenv("SSL_CERT_FILE", str(bad))
    found = look_up(LogRef(served.url, writer.vkey), "cd" * 32, home=tmp_path, allow_private=True)
    assert isinstance(found, NeverRecorded) and found.checkpoint_size == 4


def test_the_proxys_early_start_answers_as_a_plain_check(
    grown: Any, served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``PublicCheck.start`` (the checkpoint while the server boots), then ``check``:
    the log grew in between, and the answer is the grown log's."""
    writer, small, big = grown
    monkeypatch.setenv("TOOLPIN_LOG_ALLOW_PRIVATE", "1")
    served.show(small)
    digest = entries(writer.path)[3]["digests"]["surface"]
    public = PublicCheck(LogSettings(served.url, writer.vkey), tmp_path / "home")
    public.start()
    early = public._early
    assert early is not None
    early.join()
    served.show(big)
    evidence = public.check(digest)
    assert evidence.recorded, evidence.problem
    assert isinstance(evidence.found, Recorded) and evidence.found.checkpoint_size == 4
    # A second check (a block later in the session) is a whole lookup of its own.
    assert not public.check("cd" * 32).recorded


def test_the_proxys_early_start_reports_an_unreachable_log_at_the_check(
    grown: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer, _, _ = grown
    monkeypatch.setenv("TOOLPIN_LOG_ALLOW_PRIVATE", "1")
    public = PublicCheck(LogSettings("http://127.0.0.1:9/", writer.vkey), tmp_path, timeout=1.0)
    public.start()
    evidence = public.check("cd" * 32)
    assert evidence.found is None and evidence.problem_kind == "unreachable"
    assert evidence.problem is not None and "could not be checked" in evidence.problem


def test_a_proven_entry_bundle_is_kept_and_read_from_the_cache(
    grown: Any, served: Served, tmp_path: Path
) -> None:
    writer, _, big = grown
    served.show(big)
    home = tmp_path / "home"
    digest = entries(writer.path)[1]["digests"]["surface"]
    ref = LogRef(served.url, writer.vkey)
    first = look_up(ref, digest, home=home, allow_private=True)
    cached = list((bundle_cache(home, ORIGIN)).rglob("*"))
    assert sorted(
        p.relative_to(bundle_cache(home, ORIGIN)).as_posix() for p in cached if p.is_file()
    ) == [  # the prefix length read from the index, the bundle, and the note's mark
        "digest-prefix",
        "tile/entries/000.p/4",
        "verified-checkpoint",
    ]
    before = served.requests
    assert look_up(ref, digest, home=home, allow_private=True) == first
    again = served.requests - before
    before = served.requests
    assert look_up(ref, digest, home=tmp_path / "cold", allow_private=True) == first
    # a cold lookup also reads the index's prefix length; the warm one fetched neither it
    # nor the bundle
    assert served.requests - before == again + 2


def test_a_bad_cached_bundle_is_fetched_again_and_replaced(
    grown: Any, served: Served, tmp_path: Path
) -> None:
    """A copy on this disk that fails the inclusion proof is the disk's fault, not the
    log's: the log's bundle is fetched, proven and kept in its place."""
    writer, _, big = grown
    served.show(big)
    home = tmp_path / "home"
    digest = entries(writer.path)[1]["digests"]["surface"]
    ref = LogRef(served.url, writer.vkey)
    first = look_up(ref, digest, home=home, allow_private=True)
    kept = bundle_cache(home, ORIGIN) / "tile/entries/000.p/4"
    good = kept.read_bytes()
    other = tmp_path / "other"
    w2 = LogWriter(other)
    for name in "abcd":
        w2.observe(name, [tool("x" + name)], "2026-09-01T03:00:00Z")
    w2.commit()
    site_of(w2, tmp_path / "other-site")
    kept.write_bytes((tmp_path / "other-site/tile/entries/000.p/4").read_bytes())
    assert kept.read_bytes() != good
    assert look_up(ref, digest, home=home, allow_private=True) == first
    assert kept.read_bytes() == good
    assert load(home, ORIGIN).distrusted is None


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> tuple[LogWriter, Path, Path]:
    """A log of 260 entries (one full level-0 tile and a partial one), and its site again
    at 520 entries (two full level-0 tiles)."""
    root = tmp_path_factory.mktemp("wide")
    writer = LogWriter(root / "wide")
    for i in range(260):
        writer.observe(f"s{i}", [tool(f"t{i}")], "2026-09-01T03:00:00Z")
    writer.commit()
    site = site_of(writer, root / "site")
    for i in range(260, 520):
        writer.observe(f"s{i}", [tool(f"t{i}")], "2026-09-02T03:00:00Z")
    writer.commit()
    return writer, site, site_of(writer, root / "grown")


def test_a_proven_full_tile_is_kept_and_a_bad_kept_copy_never_decides(
    wide: Any, served: Served, tmp_path: Path
) -> None:
    writer, site, grown = wide
    served.show(site)
    home = tmp_path / "home"
    digest = entries(writer.path)[7]["digests"]["surface"]
    ref = LogRef(served.url, writer.vkey)
    first = look_up(ref, digest, home=home, allow_private=True)
    assert isinstance(first, Recorded) and first.entry_index == 7
    kept = bundle_cache(home, ORIGIN) / "tile/0/000"
    assert kept.read_bytes() == (site / "tile/0/000").read_bytes()
    assert not (bundle_cache(home, ORIGIN) / "tile/0/001.p/4").exists()  # partial: not kept
    before = served.requests
    assert look_up(ref, digest, home=home, allow_private=True) == first
    warm = served.requests - before
    before = served.requests
    assert look_up(ref, digest, home=tmp_path / "cold", allow_private=True) == first
    # the warm lookup fetched neither the full tile nor the bundle nor the index's length
    assert served.requests - before == warm + 3
    # A kept tile that is wrong (same length, one hash changed) is not believed: the proof
    # is made again from the log's tile, which is kept in its place; nothing is distrusted.
    bad = bytearray(kept.read_bytes())
    bad[40] ^= 0xFF
    kept.write_bytes(bytes(bad))
    assert look_up(ref, digest, home=home, allow_private=True) == first
    assert kept.read_bytes() == (site / "tile/0/000").read_bytes()
    assert load(home, ORIGIN).distrusted is None
    # A kept tile that is wrong where the proof of another entry needs it, the same.
    kept.write_bytes(b"\0" * len(bad))
    other = entries(writer.path)[200]["digests"]["surface"]
    found = look_up(ref, other, home=home, allow_private=True)
    assert isinstance(found, Recorded) and found.entry_index == 200
    assert kept.read_bytes() == (site / "tile/0/000").read_bytes()
    # The log grows: the consistency proof from the kept checkpoint is made with a bad
    # kept tile first, then from the log's tiles; growth is not taken for a fork.
    kept.write_bytes(b"\1" * len(bad))
    served.show(grown)
    found = look_up(ref, digest, home=home, allow_private=True)
    assert isinstance(found, Recorded) and found.checkpoint_size == 520
    assert load(home, ORIGIN).distrusted is None
    assert kept.read_bytes() == (grown / "tile/0/000").read_bytes()
