"""Member-name folding as Go's ``encoding/json`` applies it when it decodes into a struct.

Go matches an object's member name to a struct field exactly first, then
case-insensitively, so ``{"name": "a", "Name": "b"}`` sets the one field ``Name`` twice
(the last wins) while Python and JavaScript read two members. Which names Go takes for
one depends on its version:

* Go 1.21 and newer fold each rune ``r`` to ``unicode.ToUpper(unicode.ToLower(r))``
  (ASCII by table); this uses Unicode's *simple* mappings, one rune to one rune, so
  ``"ı"`` (dotless i) and ``"İ"`` fold to ``"I"`` and ``"ß"`` never becomes ``"SS"``;
* Go 1.20 and older compare with ``bytes.EqualFold``: two runes match when one is in
  the other's ``unicode.SimpleFold`` orbit (simple case folding: ``"K"`` the Kelvin sign
  with ``"k"``, ``"ſ"`` with ``"s"``, never ``"ß"`` with ``"ss"``).

:func:`fold_keys` gives a name's key under both, and :func:`same_field` says whether a
Go client of either era would take two names for one field. Full case folding
(:meth:`str.casefold`, which maps ``"ß"`` to ``"ss"``) is deliberately not used: no Go
version applies it. ``tests/core/test_gofold.py`` compares both functions with Go's own
``unicode`` package over every code point when Go is installed.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["fold_keys", "same_field"]


def _simple_lower(char: str) -> str:
    lower = char.lower()
    # Only U+0130 has a longer full lowercase ("i" and a combining dot); its simple
    # lowercase is the "i" alone.
    return lower if len(lower) == 1 else lower[0]


def _simple_upper(char: str) -> str:
    upper = char.upper()
    if len(upper) == 1:
        return upper
    # A full uppercase of several characters ("ß" -> "SS", "ᾳ" -> "ΑΙ"): the simple
    # mapping is the one-character titlecase where Unicode gives one ("ᾳ" -> "ᾼ"), else
    # none (the character itself).
    title = char.title()
    return title if len(title) == 1 else char


@lru_cache(maxsize=4096)
def _go121(char: str) -> str:
    return _simple_upper(_simple_lower(char))


@lru_cache(maxsize=4096)
def _orbit(char: str) -> str:
    folded = char.casefold()
    if len(folded) == 1:
        return folded
    # Full folding only (status F): the simple folding (status S) is the one-character
    # lowercase where there is one ("ẞ" -> "ß"), else the character itself.
    lower = char.lower()
    return lower if len(lower) == 1 else char


def fold_keys(name: str) -> tuple[str, str]:
    """The keys under which Go (1.21 and newer, 1.20 and older) matches ``name``."""
    if name.isascii():
        return name.upper(), name.lower()
    return "".join(map(_go121, name)), "".join(map(_orbit, name))


def same_field(a: str, b: str) -> bool:
    """Whether a Go client (of either era) would take ``a`` and ``b`` for one field."""
    ka, kb = fold_keys(a), fold_keys(b)
    return ka[0] == kb[0] or ka[1] == kb[1]
