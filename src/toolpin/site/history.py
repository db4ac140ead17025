"""The checkpoints a site has published, and which one each entry's proof names.

A site is append-only: an entry's inclusion proof (``proof/<index>.tlog-proof``) is issued
once, against the checkpoint current when the entry was first published, and never
rewritten. The site keeps every checkpoint it published under ``checkpoints/<size>`` (the
signed note, verbatim; immutable) and lists them in ``api/v1/checkpoints.json``. The
entries ``[previous size, size)`` are proven against checkpoint ``size``; a reader proves
the current state with a consistency proof from it to the current ``checkpoint``, which
the tiles already give (``toolpin log verify-proof --log``, and the server pages' script).

The history is read back from the published folder itself, and trusted only as far as it
checks: a note is kept only when it is signed by the log's key, names the log's origin,
is no larger than the current checkpoint and has the root the verified log has at its
size; anything else is ignored (its entries are proven again against the current
checkpoint). A site built by toolpin before this layout has no ``checkpoints/``: its
``checkpoint`` is the one all its proofs name, so it becomes the first item of the
history (its proofs stay valid and are not rewritten).

So the output is a pure function of the log, the published history, ``--base-url`` and
``--now``: a new folder gets a history of one checkpoint, the current one.
"""

from __future__ import annotations

import base64
import bisect
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from toolpin.errors import LogError
from toolpin.publog.note import Verifier

HISTORY_DIR: Final = "checkpoints"
HISTORY_INDEX: Final = "api/v1/checkpoints.json"
MAX_NOTE_BYTES: Final = 16 << 10
MAX_HISTORY: Final = 100_000
"""The most published checkpoints read back (one a day for 270 years)."""

__all__ = [
    "HISTORY_DIR",
    "HISTORY_INDEX",
    "History",
    "LevelSource",
    "Published",
    "read_history",
]


@dataclass(frozen=True)
class Published:
    """One checkpoint the site published."""

    size: int
    root: str
    """Base64, as in the note."""
    note: str


class LevelSource:
    """:class:`toolpin.publog.merkle.HashSource` over :func:`~toolpin.publog.merkle.
    tree_levels` (a perfect subtree's hash is its node in the levels)."""

    def __init__(self, levels: Sequence[Sequence[bytes]]) -> None:
        self.levels = levels

    def node(self, level: int, index: int) -> bytes:
        return self.levels[level][index]


@dataclass(frozen=True)
class History:
    """The published checkpoints, smallest first; the last one is the current."""

    items: tuple[Published, ...]

    @property
    def sizes(self) -> list[int]:
        return [p.size for p in self.items]

    def proven_at(self, index: int) -> Published:
        """The checkpoint entry ``index``'s proof names (the first published after it)."""
        sizes = self.sizes
        return self.items[bisect.bisect_right(sizes, index)]

    def size_after(self, index: int) -> int:
        """The size of :meth:`proven_at` (``index`` -1: the first checkpoint's)."""
        return self.items[bisect.bisect_right(self.sizes, index)].size


def _read_note(path: Path) -> str | None:
    """A note file of the published folder, or ``None`` (never follows a link, never
    opens a FIFO, never reads more than a note can be)."""
    from toolpin.publog.tiles import read_bounded

    if os.path.islink(path) or not path.is_file():
        return None
    try:
        return read_bounded(path, MAX_NOTE_BYTES).decode("utf-8")
    except (OSError, LogError, UnicodeDecodeError):
        return None


def _valid(
    note: str, vkey: Verifier, origin: str, size_cap: int, source: LevelSource
) -> Published | None:
    from toolpin.publog.checkpoint import open_checkpoint
    from toolpin.publog.merkle import tree_root

    try:
        checkpoint = open_checkpoint(note, vkey, origin=origin)
    except LogError:
        return None
    if not 0 < checkpoint.size <= size_cap:
        return None
    if tree_root(source, checkpoint.size) != checkpoint.root:
        return None
    return Published(checkpoint.size, base64.b64encode(checkpoint.root).decode("ascii"), note)


def read_history(
    out: Path, vkey: Verifier, current: Published, origin: str, source: LevelSource
) -> History:
    """The history of the site in ``out`` (see the module doc), ending with ``current``."""
    found: dict[int, Published] = {}
    folder = out / HISTORY_DIR
    if os.path.isdir(folder) and not os.path.islink(folder):
        names = sorted(
            (n for n in os.listdir(folder) if n.isascii() and n.isdigit() and n[0] != "0"),
            key=int,
        )[:MAX_HISTORY]
        for name in names:
            note = _read_note(folder / name)
            item = None if note is None else _valid(note, vkey, origin, current.size, source)
            if item is not None and str(item.size) == name and item.size < current.size:
                found[item.size] = item
    else:  # the layout before this one: every proof names the site's checkpoint
        note = _read_note(out / "checkpoint")
        item = None if note is None else _valid(note, vkey, origin, current.size, source)
        if item is not None and item.size < current.size:
            found[item.size] = item
    items = [found[size] for size in sorted(found)]
    if current.size > 0:
        items.append(current)
    return History(tuple(items))
