"""The audit log's chain is verified before every append (incrementally, through the
``audit.log.verified`` cache), a broken chain is never extended, and ``repair`` keeps the
broken file, rewrites the good prefix and appends a ``repair`` entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolpin.errors import AuditChainBroken, StoreWriteError
from toolpin.pins import audit


def _log(tmp_path: Path, entries: int = 4) -> Path:
    log = tmp_path / "audit.log"
    for i in range(entries):
        audit.append(log, "pin", {"server": f"{i:016x}", "label": f"server {i}"})
    return log


def _edit(log: Path, line: int, **changes: object) -> None:
    """Change members of one entry; the line stays valid JSON (a hand edit)."""
    lines = log.read_bytes().split(b"\n")
    entry = json.loads(lines[line - 1])
    entry.update(changes)
    lines[line - 1] = json.dumps(entry, separators=(",", ":")).encode()
    log.write_bytes(b"\n".join(lines))


def test_appends_chain_and_the_cache_follows_the_file(tmp_path: Path) -> None:
    log = _log(tmp_path, 5)
    report = audit.verify_chain(log)
    assert report.ok and report.entries == 5 and report.good_bytes == log.stat().st_size
    cache = json.loads((tmp_path / "audit.log.verified").read_text())
    assert cache["offset"] == log.stat().st_size and cache["seq"] == 5
    assert cache["head"] == json.loads(log.read_text().splitlines()[-1])["hash"]


@pytest.mark.parametrize("line", [2, 4], ids=["middle", "last"])
def test_a_hand_edited_line_stops_every_append(tmp_path: Path, line: int) -> None:
    log = _log(tmp_path, 4)
    _edit(log, line, label="edited")  # same length or not: found either way
    before = log.read_bytes()
    with pytest.raises(AuditChainBroken) as caught:
        audit.append(log, "forget", {"server": "0" * 16, "label": "x"})
    assert isinstance(caught.value, StoreWriteError)
    assert f"entry hash mismatch at line {line}" in caught.value.message
    assert "toolpin verify --repair" in caught.value.message
    assert "\n" not in caught.value.diagnostics()  # one line, no advice
    assert log.read_bytes() == before  # never extended
    report = audit.verify_chain(log)
    assert not report.ok and report.line == line and report.entries == line - 1


def test_a_same_length_edit_right_after_an_append_is_found(tmp_path: Path) -> None:
    """No reliance on file times or sizes: the prefix itself is compared."""
    log = _log(tmp_path, 3)
    data = bytearray(log.read_bytes())
    at = data.index(b"server 0")
    data[at : at + 8] = b"server X"
    log.write_bytes(bytes(data))
    with pytest.raises(AuditChainBroken, match="line 1"):
        audit.append(log, "pin", {"server": "f" * 16})


def test_a_removed_line_and_a_stale_cache(tmp_path: Path) -> None:
    log = _log(tmp_path, 4)
    lines = log.read_bytes().split(b"\n")
    del lines[1]
    log.write_bytes(b"\n".join(lines))
    with pytest.raises(AuditChainBroken, match="broken link at line 2"):
        audit.append(log, "pin", {"server": "f" * 16})
    (tmp_path / "audit.log.verified").write_text("not json")  # a damaged cache: full walk
    with pytest.raises(AuditChainBroken, match="broken link at line 2"):
        audit.append(log, "pin", {"server": "f" * 16})


def test_the_cache_is_only_a_cache(tmp_path: Path) -> None:
    log = _log(tmp_path, 3)
    (tmp_path / "audit.log.verified").unlink()
    entry = audit.append(log, "pin", {"server": "f" * 16})
    assert entry["seq"] == 3
    with log.open("ab") as handle:
        handle.write(b"\n\n")  # blank lines after the last entry are skipped
    assert audit.append(log, "pin", {"server": "e" * 16})["seq"] == 4
    log.write_bytes(log.read_bytes().rstrip(b"\n"))  # saved without its last line break
    assert audit.append(log, "pin", {"server": "d" * 16})["seq"] == 5
    assert audit.verify_chain(log).ok and audit.verify_chain(log).entries == 6


@pytest.mark.parametrize(
    ("junk", "problem"),
    [
        (b"x" * 1000, "invalid JSON at line 2"),
        (b'{"a": "' + b"x" * (1 << 20) + b'"}', "a line too long to be an entry at line 2"),
        (b'{"seq": 1}', "not an audit entry at line 2"),
    ],
)
def test_a_junk_tail_is_a_broken_chain(tmp_path: Path, junk: bytes, problem: str) -> None:
    log = _log(tmp_path, 1)
    with log.open("ab") as handle:
        handle.write(junk)
    with pytest.raises(AuditChainBroken, match=problem):
        audit.append(log, "pin", {"server": "f" * 16})
    assert audit.verify_chain(log).problem == problem


@pytest.mark.parametrize("line", [1, 2, 4], ids=["first", "middle", "last"])
def test_repair_keeps_the_broken_file_and_the_good_prefix(tmp_path: Path, line: int) -> None:
    log = _log(tmp_path, 4)
    _edit(log, line, label="edited")
    broken = log.read_bytes()
    good = b"".join(x + b"\n" for x in broken.split(b"\n")[: line - 1])
    done = audit.repair(log, now="2026-12-03T06:40:01.123Z")
    assert done is not None
    assert done.kept_as == tmp_path / "audit.log.broken-20261203T064001Z"
    assert done.kept_as.read_bytes() == broken
    assert done.entries == line - 1
    assert done.problem == f"entry hash mismatch at line {line}"
    data = log.read_bytes()
    assert data.startswith(good)
    repair_entry = json.loads(data[len(good) :])
    assert repair_entry["event"] == "repair" and repair_entry["seq"] == line - 1
    assert repair_entry["keptAs"] == done.kept_as.name
    assert repair_entry["kept"] == line - 1
    report = audit.verify_chain(log)
    assert report.ok and report.entries == line
    assert audit.append(log, "pin", {"server": "f" * 16})["seq"] == line
    assert audit.repair(log) is None  # intact: nothing to do
    again = audit.repair(log, now="2026-12-03T06:40:01.999Z")
    assert again is None


def test_two_repairs_in_one_second_keep_both_files(tmp_path: Path) -> None:
    log = _log(tmp_path, 2)
    for _ in range(2):
        _edit(log, 2, label="edited")
        assert audit.repair(log, now="2026-12-03T06:40:01.000Z") is not None
    names = sorted(p.name for p in tmp_path.glob("audit.log.broken-*"))
    assert names == ["audit.log.broken-20261203T064001Z", "audit.log.broken-20261203T064001Z-2"]
    assert audit.verify_chain(log).ok
