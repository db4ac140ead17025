"""Showing server text to a person without letting it do harm.

* :func:`visible` turns every character that can hide, reorder or rewrite text on a
  terminal (C0/C1 controls, ANSI escapes, bidi controls, zero-width and invisible
  characters, tag characters, variation selectors, unpaired surrogates) into a visible
  ``\\u{hex}`` escape. Every server-provided string passes through it before display.
* :func:`definition_diff` is the human diff of two definitions: a line diff of their
  pretty-printed canonical JSON, with long unchanged runs collapsed.
* :func:`safe_json` is the one way toolpin writes JSON for people and pipes (every
  ``--json``): valid UTF-8 JSON in which every character :func:`visible` would escape is
  a ``\\uXXXX`` escape, so no string can drive a terminal.
* :class:`Line` carries a style name; :func:`to_text` turns styled lines into plain or
  ANSI-coloured text. Whether to colour is the caller's decision (a TTY, and never with
  ``NO_COLOR``): this module is part of the pure core and does no I/O.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from toolpin.core.canonical import JSONValue, pretty_json

# Characters that are invisible, reorder text, or drive a terminal. Kept as ranges so the
# rule is easy to audit against Unicode's default-ignorable and bidi-control lists.
_UNSAFE_RANGES: Final = (
    (0x0000, 0x0008),  # C0 controls (tab, newline and carriage return are escaped below)
    (0x000B, 0x000C),
    (0x000E, 0x001F),
    (0x007F, 0x009F),  # DEL and C1 controls (incl. 0x9B, the 8-bit CSI)
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x061C, 0x061C),  # Arabic letter mark
    (0x115F, 0x1160),  # Hangul fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian variation selectors and vowel separator
    (0x200B, 0x200F),  # zero-width space/joiners, LRM, RLM
    (0x2028, 0x202E),  # line/paragraph separators, bidi embeddings and overrides
    (0x2060, 0x206F),  # word joiner, invisible operators, bidi isolates, deprecated
    (0x3164, 0x3164),  # Hangul filler
    (0xD800, 0xDFFF),  # unpaired surrogates
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFEFF, 0xFEFF),  # zero-width no-break space / BOM
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF9, 0xFFFB),  # interlinear annotation controls
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical symbol formatting
    (0xE0000, 0xE0FFF),  # tag characters and variation selectors supplement
)


def _class_of(ranges: Iterable[tuple[int, int]]) -> str:
    parts = []
    for low, high in ranges:
        if low == high:
            parts.append(f"\\U{low:08x}")
        else:
            parts.append(f"\\U{low:08x}-\\U{high:08x}")
    return "[" + "".join(parts) + "]"


@functools.cache
def _pattern(kind: str) -> re.Pattern[str]:
    # Compiled on first use: the proxy's start path rarely needs them.
    extra: tuple[tuple[int, int], ...] = ()
    if kind == "multiline":
        extra = ((0x0009, 0x0009), (0x000D, 0x000D))
    elif kind == "one-line":
        extra = ((0x0009, 0x000A), (0x000D, 0x000D))
    return re.compile(_class_of((*_UNSAFE_RANGES, *extra)))


def _escape(match: re.Match[str]) -> str:
    return f"\\u{{{ord(match.group()):x}}}"


def visible(text: str, *, multiline: bool = False) -> str:
    """``text`` with every unsafe character written as ``\\u{hex}``.

    With ``multiline=False`` (for names, labels and one-line fields) newlines, tabs and
    carriage returns are escaped too; with ``multiline=True`` newlines are kept.
    """
    if text.isascii() and text.isprintable():
        return text  # the common case: nothing to escape
    return _pattern("multiline" if multiline else "one-line").sub(_escape, text)


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def safe_json(
    value: object,
    *,
    indent: int | None = 2,
    sort_keys: bool = False,
    ensure_ascii: bool = False,
) -> str:
    """``json.dumps`` for output: no string in it can drive or fool a terminal.

    C0 and C1 controls, DEL, bidi controls, zero-width and invisible characters, tag
    characters, variation selectors and unpaired surrogates are written as ``\\uXXXX``
    (astral ones as a surrogate pair), so the text is always valid UTF-8 and parses back
    to the same value. Other non-ASCII text stays readable unless ``ensure_ascii``.
    """
    import json

    text = json.dumps(value, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii)
    if text.isascii():
        return text
    return _pattern("plain").sub(_json_escape, text)


def has_unsafe(text: str) -> bool:
    """True when :func:`visible` would change ``text`` (newlines and tabs excepted)."""
    return _pattern("plain").search(text) is not None


def clip(text: str, limit: int = 80) -> str:
    """Cut a (visible) one-line text to ``limit`` characters with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plural(count: int, singular: str, many: str | None = None) -> str:
    """The noun for ``count`` of it: ``tool`` for 1, ``tools`` otherwise (``0 tools``).

    ``many`` names an irregular plural; by default ``s`` is added, and a ``y`` after a
    consonant becomes ``ies`` (``entry``, ``entries``).
    """
    if count == 1:
        return singular
    if many is not None:
        return many
    if singular.endswith("y") and singular[-2:-1] not in ("", "a", "e", "i", "o", "u"):
        return singular[:-1] + "ies"
    return singular + "s"


def counted(count: int, singular: str, many: str | None = None) -> str:
    """``1 tool``, ``2 tools``, ``0 tools``, ``1 entry``, ``3 entries``: a count and its noun."""
    return f"{count} {plural(count, singular, many)}"


# ------------------------------------------------------------------------------- styled lines


@dataclass(frozen=True, slots=True)
class Line:
    """One line of human output; ``style`` is a name such as ``"add"`` or ``"high"``."""

    text: str
    style: str | None = None


_ANSI: Final = {
    "add": "\x1b[32m",
    "del": "\x1b[31m",
    "hunk": "\x1b[36m",
    "header": "\x1b[1m",
    "high": "\x1b[31m",
    "medium": "\x1b[33m",
    "low": "\x1b[2m",
    "dim": "\x1b[2m",
    "bad": "\x1b[1;31m",
    "good": "\x1b[32m",
}
_RESET: Final = "\x1b[0m"


def to_text(lines: Iterable[Line], *, color: bool = False) -> str:
    """Join styled lines; ANSI colour only when ``color`` is True."""
    out = []
    for line in lines:
        code = _ANSI.get(line.style or "") if color else None
        out.append(f"{code}{line.text}{_RESET}" if code else line.text)
    return "\n".join(out)


# ------------------------------------------------------------------------------------ diffs

COLLAPSE_AFTER: Final = 3
"""Unchanged runs longer than this many lines are collapsed to their ends."""


def pretty_lines(value: JSONValue) -> list[str]:
    """Pretty-printed canonical JSON of ``value``, every line made visible."""
    return [visible(line, multiline=False) for line in _pretty(value).split("\n")]


_EXACT: Final = 2**53 - 1


def plain_json(value: object) -> bool:
    """Only objects with ASCII member names, arrays, strings, booleans, null and integers
    a double holds exactly: values whose canonical member order and number spelling are
    those of :func:`json.dumps`, so :func:`pretty_json` prints them as ``json.dumps`` with
    ``indent=2`` and sorted keys does."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return -_EXACT <= value <= _EXACT  # type: ignore[operator]
    if kind is dict:
        return all(
            type(k) is str and k.isascii() and plain_json(v)
            for k, v in value.items()  # type: ignore[attr-defined]
        )
    if kind is list:
        return all(plain_json(v) for v in value)  # type: ignore[attr-defined]
    return False


def _pretty(value: JSONValue) -> str:
    """:func:`pretty_json` of ``value``; for a plain value (:func:`plain_json`) written by
    ``orjson``, whose indented, key-sorted output is ``json.dumps``' text for such values
    (a lone surrogate, which orjson refuses, takes the general path)."""
    try:
        plain = plain_json(value)
    except RecursionError:
        plain = False
    if plain:
        import orjson

        try:
            return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
        except TypeError:  # orjson.JSONEncodeError: a lone surrogate, too deep
            pass
    return pretty_json(value)


WRAP_WIDTH: Final = 100
"""Lines of a review longer than this are wrapped (never cut)."""
_CONTINUED: Final = "↪ "


def wrap_line(text: str, width: int = WRAP_WIDTH) -> list[str]:
    """``text`` (already visible) cut into pieces of at most ``width`` characters.

    Nothing is dropped: joining the pieces gives ``text`` back. A cut never falls inside
    a ``\\u{...}`` escape, so every escape stays readable on one line.
    """
    if len(text) <= width:
        return [text]
    out = []
    start = 0
    while len(text) - start > width:
        cut = start + width
        space = text.rfind(" ", max(start + 1, cut - 24), cut)
        if space > start:
            cut = space + 1  # after a space: words stay whole where they can
        escape = text.rfind("\\u{", max(start, cut - 12), cut)
        if escape > start and text.find("}", escape, cut) < 0:
            cut = escape
        out.append(text[start:cut])
        start = cut
    out.append(text[start:])
    return out


def wrapped(lines: Iterable[Line], width: int = WRAP_WIDTH, *, indent: str = "") -> list[Line]:
    """Styled lines with every long line wrapped; continuations start with ``↪``."""
    out: list[Line] = []
    for line in lines:
        pieces = wrap_line(line.text, width)
        out.append(Line(pieces[0], line.style))
        out.extend(Line(f"{indent}{_CONTINUED}{piece}", line.style) for piece in pieces[1:])
    return out


def line_diff(
    old: Sequence[str],
    new: Sequence[str],
    *,
    old_label: str,
    new_label: str,
    context: int = COLLAPSE_AFTER,
) -> list[Line]:
    """A unified-style line diff; unchanged runs longer than ``context`` are collapsed."""
    from toolpin.core.seqdiff import opcodes

    out = [Line(f"--- {old_label}", "del"), Line(f"+++ {new_label}", "add")]
    for tag, i1, i2, j1, j2 in opcodes(old, new):
        if tag == "equal":
            run = old[i1:i2]
            if len(run) > 2 * context + 1:
                out.extend(Line(f"  {text}", "dim") for text in run[:context])
                out.append(Line(f"  … {len(run) - 2 * context} unchanged lines …", "dim"))
                out.extend(Line(f"  {text}", "dim") for text in run[-context:])
            else:
                out.extend(Line(f"  {text}", "dim") for text in run)
            continue
        out.extend(Line(f"- {text}", "del") for text in old[i1:i2])
        out.extend(Line(f"+ {text}", "add") for text in new[j1:j2])
    return out


def definition_diff(old: JSONValue, new: JSONValue, *, name: str) -> list[Line]:
    """The diff of two versions of one definition, headed ``pinned/<name>``."""
    return pretty_diff(pretty_lines(old), pretty_lines(new), name=name)


def pretty_diff(old: Sequence[str], new: Sequence[str], *, name: str) -> list[Line]:
    """:func:`definition_diff` of two definitions already pretty-printed
    (:func:`pretty_lines`), for a caller that keeps those lines."""
    label = visible(name)
    return line_diff(old, new, old_label=f"pinned/{label}", new_label=f"observed/{label}")


def text_diff(old: str, new: str, *, name: str) -> list[Line]:
    """The diff of two texts (instructions), each line made visible."""
    return line_diff(
        [visible(x) for x in old.split("\n")],
        [visible(x) for x in new.split("\n")],
        old_label=f"pinned/{name}",
        new_label=f"observed/{name}",
    )
