"""The reading of the log a build keeps for the next one (:mod:`toolpin.site.verified`):
used only when bound to its signed checkpoint and extended by the current one, with the new
entries audited; the view it gives is the full audit's, and so are the site's bytes."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from site_helpers import NOW, LogWriter, tool

from toolpin.publog.note import Verifier
from toolpin.site import verified
from toolpin.site.build import build_site, code_digest, parse_now
from toolpin.site.model import LogView, UnverifiedLogError, read_log


def _grow(writer: LogWriter, start: int, count: int) -> None:
    """``count`` observations of 40 servers, a new tool set each time (so new blobs)."""
    for n in range(start, start + count):
        day = 1 + n // 40 % 28
        writer.observe(
            f"server-{n % 40}", [tool(f"t{n}")], f"2026-11-{day:02d}T00:00:{n % 60:02d}Z"
        )
    writer.commit()


def _same(a: LogView, b: LogView) -> None:
    assert a.checkpoint == b.checkpoint
    assert a.servers == b.servers
    assert a.leaf_hashes == b.leaf_hashes
    assert a.observations == b.observations
    assert a.unreadable == b.unreadable
    assert a.audited == b.audited


class _Audits:
    """Counts the full audits :func:`verified.read_verified` falls back to."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0

        def counted(*args: Any, **kwargs: Any) -> LogView:
            self.calls += 1
            return read_log(*args, **kwargs)

        monkeypatch.setattr(verified, "read_log", counted)


def _read(writer: LogWriter, kept: Path) -> LogView:
    vkey = Verifier.from_text(writer.vkey)
    return verified.read_verified(writer.path, vkey, state=None, kept=kept, code=code_digest())


def test_the_kept_reading_gives_the_full_audits_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = LogWriter(tmp_path / "log")
    _grow(writer, 0, 300)  # past the first bundle: the next entries share the second
    kept = tmp_path / "cache" / verified.FILE
    audits = _Audits(monkeypatch)
    vkey = Verifier.from_text(writer.vkey)
    _same(_read(writer, kept), read_log(writer.path, vkey))
    assert audits.calls == 1 and kept.is_file()
    _same(_read(writer, kept), read_log(writer.path, vkey))  # the same size: kept
    assert audits.calls == 1
    _grow(writer, 300, 230)  # the second bundle completed, a third begun
    _same(_read(writer, kept), read_log(writer.path, vkey))
    assert audits.calls == 1  # the new entries only were audited
    # (the new entries were appended to the kept reading, bound to the new checkpoint)
    reading = verified._load(kept, vkey, code_digest())
    assert reading is not None and reading.note == writer.log.checkpoint_note


def test_an_incremental_build_from_the_kept_reading_is_a_full_builds_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = LogWriter(tmp_path / "log")
    _grow(writer, 0, 270)
    vkey = Verifier.from_text(writer.vkey)
    now = parse_now(NOW)
    cache = tmp_path / "cache"
    other = tmp_path / "cache-b"  # "b": the same builds, each one from the full audit
    for out, kept in (("a", cache), ("b", other)):
        build_site(writer.path, vkey, tmp_path / out, now=now, cache=kept)
    _grow(writer, 270, 40)
    audits = _Audits(monkeypatch)
    build_site(writer.path, vkey, tmp_path / "a", now=now, cache=cache)
    assert audits.calls == 0
    (other / verified.FILE).unlink()
    build_site(writer.path, vkey, tmp_path / "b", now=now, cache=other)
    assert audits.calls == 1
    diff = subprocess.run(["diff", "-r", str(tmp_path / "a"), str(tmp_path / "b")], check=False)
    assert diff.returncode == 0


def test_a_kept_reading_not_of_its_checkpoints_tree_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = LogWriter(tmp_path / "log")
    _grow(writer, 0, 30)
    kept = tmp_path / "cache" / verified.FILE
    _read(writer, kept)
    header, *lines = kept.read_bytes().split(b"\n")  # the header, then the versions
    doc = orjson.loads(header)
    doc["leaves"] = ("00" * 32) + doc["leaves"][64:]  # another first leaf
    kept.write_bytes(b"\n".join([orjson.dumps(doc), *lines]))
    _grow(writer, 30, 5)
    audits = _Audits(monkeypatch)
    _same(_read(writer, kept), read_log(writer.path, Verifier.from_text(writer.vkey)))
    assert audits.calls == 1
    kept.write_bytes(b"{not json")
    _read(writer, kept)
    assert audits.calls == 2


def test_a_new_entry_whose_blob_is_damaged_is_refused(tmp_path: Path) -> None:
    writer = LogWriter(tmp_path / "log")
    _grow(writer, 0, 20)
    kept = tmp_path / "cache" / verified.FILE
    _read(writer, kept)
    _grow(writer, 20, 1)
    ref = orjson.loads(writer.log.read_entry(20))["blob"]
    writer.blobs.path(ref).write_bytes(b"{}")
    with pytest.raises(UnverifiedLogError, match="does not match its digest"):
        _read(writer, kept)


def test_a_tile_changed_after_it_was_verified_is_not_published(tmp_path: Path) -> None:
    writer = LogWriter(tmp_path / "log")
    _grow(writer, 0, 260)
    vkey = Verifier.from_text(writer.vkey)
    now = parse_now(NOW)
    cache = tmp_path / "cache"
    build_site(writer.path, vkey, tmp_path / "a", now=now, cache=cache)
    _grow(writer, 260, 3)
    tile = writer.path / "tile" / "0" / "000"
    data = bytearray(tile.read_bytes())
    data[0] ^= 1
    tile.write_bytes(bytes(data))
    # The kept reading covers that tile, so this build does not audit it again: a new
    # site copies it, compares it with the verified tree, and refuses it.
    with pytest.raises(UnverifiedLogError, match="tile/0/000 changed in the log"):
        build_site(writer.path, vkey, tmp_path / "b", now=now, cache=cache)
    assert not (tmp_path / "b").exists()


def test_a_grown_reading_is_appended_and_a_torn_record_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = LogWriter(tmp_path / "log")
    _grow(writer, 0, 300)
    kept = tmp_path / "cache" / verified.FILE
    tail = verified.tail_path(kept)
    vkey = Verifier.from_text(writer.vkey)
    _read(writer, kept)
    base = kept.read_bytes()
    assert not tail.exists()
    _grow(writer, 300, 30)
    audits = _Audits(monkeypatch)
    _same(_read(writer, kept), read_log(writer.path, vkey))
    _grow(writer, 330, 20)
    _same(_read(writer, kept), read_log(writer.path, vkey))
    assert audits.calls == 0
    assert kept.read_bytes() == base  # only the new entries were written, as two records
    records = [orjson.loads(line) for line in tail.read_bytes().splitlines()]
    assert [(r["from"], r["size"]) for r in records] == [(300, 330), (330, 350)]
    reading = verified._load(kept, vkey, code_digest())
    assert reading is not None and reading.note == writer.log.checkpoint_note
    full = read_log(writer.path, vkey)
    entries = reading.entries
    assert {sid: h.versions for sid, h in entries.servers.items()} == {
        sid: h.versions for sid, h in full.servers.items()
    }
    assert entries.leaves == full.leaf_hashes
    assert entries.observations == full.observations and entries.unreadable == full.unreadable
    # A torn last record: the reading up to it is used, the rest audited, and the next
    # reading is saved whole.
    tail.write_bytes(tail.read_bytes()[:-40])
    reading = verified._load(kept, vkey, code_digest())
    assert reading is not None and reading.checkpoint.size == 330 and reading.appended is None
    _grow(writer, 350, 5)
    _same(_read(writer, kept), read_log(writer.path, vkey))
    assert audits.calls == 0
    assert not tail.exists() and kept.read_bytes() != base
    # A record of another base, or one whose leaves are not the tree of its note, is not used.
    _grow(writer, 355, 5)
    _read(writer, kept)
    record = orjson.loads(tail.read_bytes())
    tail.write_bytes(orjson.dumps({**record, "base": "0" * 64}) + b"\n")
    reading = verified._load(kept, vkey, code_digest())
    assert reading is not None and reading.checkpoint.size == 355
    tail.write_bytes(orjson.dumps({**record, "leaves": "00" * 32 * 5}) + b"\n")
    assert verified._load(kept, vkey, code_digest()) is None
    _same(_read(writer, kept), read_log(writer.path, vkey))
    assert audits.calls == 1


def test_the_kept_reading_is_read_line_by_line_and_a_missing_line_refuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A header, then the versions and the reports' reading, CHUNK to a line (each parsed
    # on its own): the view is the full audit's; a file missing a line, or with one more
    # than its header says, is not used (the whole log is audited).
    monkeypatch.setattr(verified, "CHUNK", 7)
    writer = LogWriter(tmp_path / "log")
    _grow(writer, 0, 60)
    kept = tmp_path / "cache" / verified.FILE
    vkey = Verifier.from_text(writer.vkey)
    _read(writer, kept)
    lines = kept.read_bytes().split(b"\n")
    header = orjson.loads(lines[0])
    assert header["versions"] == 9 and header["observations"] == 9
    assert len(lines) == 1 + 9 + 9 + 1 and lines[-1] == b""
    assert [len(orjson.loads(line)) for line in lines[1:-1]] == [7] * 8 + [4] + [7] * 8 + [4]
    reading = verified._load(kept, vkey, code_digest())
    assert reading is not None
    _same(
        verified.read_verified(writer.path, vkey, state=None, kept=kept, code=code_digest()),
        read_log(writer.path, vkey),
    )
    audits = _Audits(monkeypatch)
    whole = kept.read_bytes()
    for damaged in (
        b"\n".join(lines[:5] + lines[6:]),  # a line of versions missing
        b"\n".join(lines[:-2] + lines[-1:]),  # a line of observations missing
        whole + b"[]\n",  # one line more
        whole[: len(lines[0]) // 2],  # a torn header
        b"\n".join(lines[:1] + lines[2:3] + lines[1:2] + lines[3:]),  # out of order
    ):
        kept.write_bytes(damaged)
        assert verified._load(kept, vkey, code_digest()) is None
    _grow(writer, 60, 3)
    kept.write_bytes(b"\n".join(lines[:5] + lines[6:]))
    _same(_read(writer, kept), read_log(writer.path, vkey))
    assert audits.calls == 1
    assert verified._load(kept, vkey, code_digest()) is not None  # saved whole again
