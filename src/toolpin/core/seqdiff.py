"""The opcodes of :class:`difflib.SequenceMatcher` (``autojunk=False``), found without it
for the most common edit.

Most changes of a definition replace a run of lines (or words) by another run that shares
nothing with either side, between an unchanged start and an unchanged end. For such an
edit the matcher's answer is known: it keeps the common start and the common end and
replaces what lies between. :func:`opcodes` checks exactly that condition and answers
directly; for anything else it asks the matcher itself. The answer is the same either way
(property-tested against the matcher), so every diff toolpin prints is the one difflib
gives.

Why the condition is enough. Let ``a = P + X + S`` and ``b = P + Y + S`` with ``P`` and
``S`` the longest common start and end, ``X`` and ``Y`` both non-empty, no element of
``X`` in ``b`` and none of ``Y`` in ``a``. A matching block holds no element of ``X`` or
``Y``, and ``X`` and ``Y`` cut each side in two, so every block lies within ``P`` or ``S``
on each side. The matcher takes the longest block first, the earliest in ``a`` then in
``b`` on a tie: that is ``P`` at ``(0, 0)`` when ``len(P) >= len(S)`` (a block elsewhere
is at most as long and starts later), else ``S`` aligned at the end (the only block that
long). What is left on each side is ``S`` or ``P`` aligned again, and ``X`` against ``Y``,
which share nothing. So the blocks are ``P`` and ``S`` and the opcodes are
``equal``, ``replace``, ``equal``. With ``X`` empty (only ``Y`` added) the same holds
unless a block can run across the seam where ``P`` meets ``S`` in ``a`` (``aaa`` against
``ayaa``): that needs the two elements at the seam to stand side by side again within
``P`` or within ``S``, which is checked (and the same for ``Y`` empty, in ``b``). The opcodes
are then ``equal``, ``insert`` (or ``delete``), ``equal``.
"""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Sequence
from typing import Literal

__all__ = ["Opcode", "opcodes"]

Opcode = tuple[Literal["replace", "delete", "insert", "equal"], int, int, int, int]


def opcodes(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[Opcode]:
    """``difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()``."""
    n, m = len(a), len(b)
    limit = min(n, m)
    start = 0
    while start < limit and a[start] == b[start]:
        start += 1
    end = 0
    limit -= start
    while end < limit and a[n - 1 - end] == b[m - 1 - end]:
        end += 1
    old, new = a[start : n - end], b[start : m - end]
    middle: Opcode | None = None
    if old and new:
        if set(old).isdisjoint(b) and set(new).isdisjoint(a):
            middle = ("replace", start, n - end, start, m - end)
    elif new:  # only added: ``a`` is the common start and end, side by side
        if set(new).isdisjoint(a) and not _seam_repeats(a, start):
            middle = ("insert", start, start, start, m - end)
    elif old and set(old).isdisjoint(b) and not _seam_repeats(b, start):
        middle = ("delete", start, n - end, start, start)
    if middle is None:
        return difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    out: list[Opcode] = []
    if start:
        out.append(("equal", 0, start, 0, start))
    out.append(middle)
    if end:
        out.append(("equal", n - end, n, m - end, m))
    return out


def _seam_repeats(seq: Sequence[Hashable], seam: int) -> bool:
    """Whether the pair of elements at ``seam`` (the last of the common start and the
    first of the common end, side by side in ``seq``) also stands side by side within
    the start or within the end: only then can a block run across the seam."""
    if seam == 0 or seam == len(seq):
        return False
    left, right = seq[seam - 1], seq[seam]
    return any(seq[i] == left and seq[i + 1] == right for i in range(len(seq) - 1) if i != seam - 1)
