"""``atomic_write`` (:mod:`toolpin.util.fs`): the bytes, or pieces written as they come;
the target is the old file or the new one, never a mixture, and no temporary is left."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from toolpin.util.fs import atomic_write


def test_pieces_are_written_in_order(tmp_path: Path) -> None:
    target = tmp_path / "file"
    atomic_write(target, b"old")
    atomic_write(target, iter([b"a", b"", b"bc\n", b"d"]), sync=False)
    assert target.read_bytes() == b"abc\nd"
    atomic_write(target, b"whole")
    assert target.read_bytes() == b"whole"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_a_failure_while_the_pieces_come_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "file"
    atomic_write(target, b"old")

    def pieces() -> Iterator[bytes]:
        yield b"new, half"
        raise TypeError("cannot encode")

    with pytest.raises(TypeError, match="cannot encode"):
        atomic_write(target, pieces(), sync=False)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
