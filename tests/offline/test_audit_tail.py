"""The audit log's last entry is read in O(entry size): a corrupt tail of any size fails
closed at once (loose bound for a slow machine), and well-formed logs keep chaining."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from toolpin.errors import StoreError
from toolpin.pins import audit


def test_a_64_mb_junk_tail_fails_closed_fast(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    audit.append(log, "pin", {"server": "0123456789abcdef"})
    with log.open("ab") as handle:
        block = b"x" * (1 << 20)
        for _ in range(64):
            handle.write(block)
    started = time.monotonic()
    with pytest.raises(StoreError, match="ends with a corrupt line"):
        audit.append(log, "pin", {"server": "0123456789abcdef"})
    assert time.monotonic() - started < 2.0


def test_a_junk_tail_of_newlines_also_fails_closed(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    audit.append(log, "pin", {"server": "0123456789abcdef"})
    with log.open("ab") as handle:
        handle.write(b"\n" * (3 << 20))
    with pytest.raises(StoreError):
        audit.append(log, "pin", {"server": "0123456789abcdef"})


@pytest.mark.parametrize("size", [0, 10, 4095, 4096, 70_000, 200_000])
def test_last_line_of_entries_of_every_size(tmp_path: Path, size: int) -> None:
    log = tmp_path / "audit.log"
    first = audit.append(log, "pin", {"server": "a", "pad": "p" * size})
    second = audit.append(log, "drift", {"server": "b", "pad": "q" * size})
    assert second["seq"] == first["seq"] + 1 and second["prev"] == first["hash"]
    report = audit.verify_chain(log)
    assert report.ok and report.entries == 2
    with log.open("ab") as handle:
        handle.write(b"\n\n")  # blank lines at the end are skipped
    last = audit._last_line(log)
    assert last is not None and last.endswith(b"}") and b'"seq":1' in last


def test_empty_and_missing_logs(tmp_path: Path) -> None:
    assert audit._last_line(tmp_path / "missing") is None
    (tmp_path / "empty").write_bytes(b"")
    assert audit._last_line(tmp_path / "empty") is None
    (tmp_path / "blank").write_bytes(b"\n\n\n")
    assert audit._last_line(tmp_path / "blank") is None
