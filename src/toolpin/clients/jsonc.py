"""A small span editor for JSON with comments (JSONC): read values, edit a few spans.

Why hand-written: MCP client configs are JSON, and VS Code's ``mcp.json`` (and others)
may hold ``//`` and ``/* */`` comments and trailing commas. Editing them must leave
every other byte alone. No library fits on Python 3.11 (research, ecosystem §2.4):
``json5`` parses comments but cannot write them back, ``json-five`` installs into the
same import package as ``json5``, ``commentjson``/``jsonc-parser`` strip comments,
``json5kit`` fails on block comments, ``jsonc-edit`` needs Node at run time and the
maintained JSONC documents need Python 3.12+. The approach follows VS Code's
``jsonc-parser`` (``modify`` + ``applyEdits``): tokens with offsets, a parse that maps
each value to its span, and edits that splice text into exactly those spans.

* :func:`tokenize` yields every token with its offsets, comments and whitespace included.
* :func:`parse` builds :class:`Node` values (objects keep member order and spans);
  a repeated member name is refused, as clients would silently keep one of them.
  Numbers are never re-encoded: the value of one too long for Python to hold is a
  :class:`RawNumber` carrying its text.
* Edits return new text: :func:`replace_value`, :func:`insert_member`,
  :func:`delete_member`, :func:`insert_items`, :func:`delete_items`. Inserted text
  copies the neighbours' indentation, separator style and line ending, so an insert
  followed by the matching delete gives back the original text byte for byte.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from toolpin.errors import ConfigError

TokenKind = Literal["{", "}", "[", "]", ":", ",", "string", "number", "literal", "comment", "space"]
Path = tuple[str | int, ...]

_NUMBER = re.compile(r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?")
_SPACE = re.compile(r"[ \t\r\n\ufeff]+")
_LITERALS = {"true": True, "false": False, "null": None}
_MAX_DEPTH = 200


@dataclass(frozen=True, slots=True)
class RawNumber:
    """A number Python cannot hold exactly: an integer too long to convert (beyond
    :data:`_MAX_INT_DIGITS` digits) or a float outside the double range. Only its text is
    kept; the editor never rewrites a span it does not edit, so the file keeps it byte
    for byte. It is neither ``int`` nor ``str``, so no reader mistakes it for either."""

    raw: str

    def __str__(self) -> str:
        return self.raw


_MAX_INT_DIGITS = 4000  # below Python's default int/str conversion limit (4300)


def number_value(raw: str) -> int | float | RawNumber:
    """The value of a JSON number token: ``int``, ``float`` or :class:`RawNumber`."""
    if any(ch in raw for ch in ".eE"):
        value = float(raw)
        return value if math.isfinite(value) else RawNumber(raw)
    if len(raw) > _MAX_INT_DIGITS:
        return RawNumber(raw)
    return int(raw)


class JSONCError(ConfigError):
    """Text that is not JSON with comments; ``offset`` is where reading stopped."""

    def __init__(self, message: str, offset: int, text: str) -> None:
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        super().__init__(f"line {line}, column {column}: {message}")
        self.offset = offset


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    start: int
    end: int


@dataclass(frozen=True)
class Member:
    key: str
    key_start: int
    value: Node
    comma: int | None
    """Offset of the comma after this member's value, if any (also a trailing one)."""


@dataclass(frozen=True)
class Node:
    kind: Literal["object", "array", "string", "number", "literal"]
    start: int
    end: int
    value: object
    members: tuple[Member, ...] = ()
    items: tuple[Node, ...] = ()
    commas: tuple[int | None, ...] = field(default=())
    """For arrays: the offset of the comma after each item, if any."""

    def member(self, key: str) -> Member | None:
        for m in self.members:
            if m.key == key:
                return m
        return None

    def get(self, key: str) -> Node | None:
        m = self.member(key)
        return m.value if m else None


def tokenize(text: str) -> Iterator[Token]:
    """Every token of ``text`` with its offsets, comments and whitespace included."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "{}[]:,":
            yield Token(c, i, i + 1)  # type: ignore[arg-type]
            i += 1
        elif c == '"':
            j = i + 1
            while True:
                if j >= n:
                    raise JSONCError("unterminated string", i, text)
                ch = text[j]
                if ch == "\\":
                    j += 2
                    continue
                if ch == '"':
                    break
                if ch in "\r\n":
                    raise JSONCError("line break inside a string", j, text)
                j += 1
            yield Token("string", i, j + 1)
            i = j + 1
        elif c == "/" and text.startswith("//", i):
            j = i + 2
            while j < n and text[j] not in "\r\n":
                j += 1
            yield Token("comment", i, j)
            i = j
        elif c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise JSONCError("unterminated comment", i, text)
            yield Token("comment", i, j + 2)
            i = j + 2
        elif c in " \t\r\n\ufeff":
            m = _SPACE.match(text, i)
            assert m is not None
            yield Token("space", i, m.end())
            i = m.end()
        elif c == "-" or c.isdigit():
            m = _NUMBER.match(text, i)
            if m is None or m.end() == i:
                raise JSONCError("bad number", i, text)
            yield Token("number", i, m.end())
            i = m.end()
        else:
            for word in _LITERALS:
                if text.startswith(word, i):
                    yield Token("literal", i, i + len(word))
                    i += len(word)
                    break
            else:
                raise JSONCError(f"unexpected character {c!r}", i, text)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = [t for t in tokenize(text) if t.kind not in ("comment", "space")]
        self.pos = 0

    def peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, kind: str | None = None) -> Token:
        tok = self.peek()
        if tok is None:
            raise JSONCError("unexpected end of text", len(self.text), self.text)
        if kind is not None and tok.kind != kind:
            raise JSONCError(f"expected {kind!r}", tok.start, self.text)
        self.pos += 1
        return tok

    def value(self, depth: int) -> Node:
        if depth > _MAX_DEPTH:
            raise JSONCError("nested too deeply", self.take().start, self.text)
        tok = self.take()
        raw = self.text[tok.start : tok.end]
        if tok.kind == "{":
            return self.obj(tok, depth)
        if tok.kind == "[":
            return self.arr(tok, depth)
        if tok.kind == "string":
            return Node("string", tok.start, tok.end, self.string(tok))
        if tok.kind == "number":
            return Node("number", tok.start, tok.end, number_value(raw))
        if tok.kind == "literal":
            return Node("literal", tok.start, tok.end, _LITERALS[raw])
        raise JSONCError("expected a value", tok.start, self.text)

    def string(self, tok: Token) -> str:
        try:
            out = json.loads(self.text[tok.start : tok.end])
        except ValueError:
            raise JSONCError("bad string", tok.start, self.text) from None
        assert isinstance(out, str)
        if not out.isascii() and any(0xD800 <= ord(ch) <= 0xDFFF for ch in out):
            raise JSONCError("a string holds an unpaired surrogate", tok.start, self.text)
        return out

    def obj(self, open_tok: Token, depth: int) -> Node:
        members: list[Member] = []
        seen: set[str] = set()
        while True:
            tok = self.peek()
            if tok is not None and tok.kind == "}":
                self.pos += 1
                value = {m.key: m.value.value for m in members}
                return Node("object", open_tok.start, tok.end, value, tuple(members))
            key_tok = self.take("string")
            key = self.string(key_tok)
            if key in seen:
                raise JSONCError("repeated member name", key_tok.start, self.text)
            seen.add(key)
            self.take(":")
            node = self.value(depth + 1)
            nxt = self.peek()
            comma = None
            if nxt is not None and nxt.kind == ",":
                comma = nxt.start
                self.pos += 1
            elif nxt is None or nxt.kind != "}":
                raise JSONCError(
                    "expected ',' or '}'", nxt.start if nxt else len(self.text), self.text
                )
            members.append(Member(key, key_tok.start, node, comma))

    def arr(self, open_tok: Token, depth: int) -> Node:
        items: list[Node] = []
        commas: list[int | None] = []
        while True:
            tok = self.peek()
            if tok is not None and tok.kind == "]":
                self.pos += 1
                value = [item.value for item in items]
                return Node(
                    "array", open_tok.start, tok.end, value, (), tuple(items), tuple(commas)
                )
            items.append(self.value(depth + 1))
            nxt = self.peek()
            if nxt is not None and nxt.kind == ",":
                commas.append(nxt.start)
                self.pos += 1
            elif nxt is None or nxt.kind != "]":
                raise JSONCError(
                    "expected ',' or ']'", nxt.start if nxt else len(self.text), self.text
                )
            else:
                commas.append(None)


def parse(text: str) -> Node:
    """The root value of ``text`` (JSON plus comments and trailing commas)."""
    parser = _Parser(text)
    root = parser.value(0)
    rest = parser.peek()
    if rest is not None:
        raise JSONCError("unexpected text after the value", rest.start, text)
    return root


def find(root: Node, path: Path) -> Node | None:
    """The node at ``path`` (object keys and array indexes), or ``None``."""
    node: Node | None = root
    for step in path:
        if node is None:
            return None
        if isinstance(step, str):
            node = node.get(step) if node.kind == "object" else None
        elif node.kind == "array" and 0 <= step < len(node.items):
            node = node.items[step]
        else:
            return None
    return node


def newline_of(text: str) -> str:
    """The file's line ending: ``\\r\\n`` when its first line break is one, else ``\\n``."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def dumps(value: object) -> str:
    """One-line JSON for a value to splice in (non-ASCII kept as is)."""
    return json.dumps(value, ensure_ascii=False)


def _splice(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def _space_before(text: str, offset: int) -> str:
    """The run of spaces, tabs and line breaks that ends at ``offset``."""
    i = offset
    while i > 0 and text[i - 1] in " \t\r\n":
        i -= 1
    return text[i:offset]


def _line_break_and_indent(text: str, offset: int) -> str | None:
    """The line break plus indentation before ``offset`` when it starts its own line."""
    space = _space_before(text, offset)
    cut = space.rfind("\n")
    if cut < 0:
        return None
    return newline_of(text) + space[cut + 1 :]


def replace_value(text: str, node: Node, new_text: str) -> str:
    """Replace the span of ``node`` with ``new_text``."""
    return _splice(text, node.start, node.end, new_text)


def insert_member(
    text: str, obj: Node, key: str, value_text: str, *, after: str | None = None
) -> str:
    """Add ``"key": value_text`` to ``obj``, after member ``after`` (default: last)."""
    if obj.kind != "object":
        raise ConfigError("cannot add a member to a value that is not an object")
    if obj.member(key) is not None:
        raise ConfigError(f"member {key!r} already exists")
    member = f"{dumps(key)}: {value_text}"
    members = list(obj.members)
    if not members:
        return _splice(text, obj.start + 1, obj.start + 1, member)
    index = len(members) - 1
    if after is not None:
        index = next((i for i, m in enumerate(members) if m.key == after), index)
    anchor = members[index]
    if index + 1 < len(members):
        nxt = members[index + 1]
        sep = _line_break_and_indent(text, nxt.key_start) or " "
        return _splice(text, nxt.key_start, nxt.key_start, f"{member},{sep}")
    sep = _line_break_and_indent(text, anchor.key_start) or " "
    if anchor.comma is not None:
        return _splice(text, anchor.comma + 1, anchor.comma + 1, f"{sep}{member},")
    return _splice(text, anchor.value.end, anchor.value.end, f",{sep}{member}")


def delete_member(text: str, obj: Node, key: str) -> str:
    """Remove member ``key`` from ``obj`` with its comma (the inverse of an insert)."""
    members = list(obj.members)
    index = next((i for i, m in enumerate(members) if m.key == key), None)
    if index is None:
        return text
    m = members[index]
    if index + 1 < len(members):
        return _splice(text, m.key_start, members[index + 1].key_start, "")
    if index == 0:
        end = m.comma + 1 if m.comma is not None else m.value.end
        return _splice(text, m.key_start, end, "")
    prev = members[index - 1]
    if m.comma is not None:
        assert prev.comma is not None
        return _splice(text, prev.comma + 1, m.comma + 1, "")
    return _splice(text, prev.value.end, m.value.end, "")


def insert_items(text: str, arr: Node, index: int, raw_items: Sequence[str]) -> str:
    """Insert already-encoded items before item ``index`` of ``arr`` (0 <= index <= len)."""
    if arr.kind != "array":
        raise ConfigError("cannot add items to a value that is not an array")
    if not raw_items:
        return text
    items = arr.items
    if not items:
        return _splice(text, arr.start + 1, arr.start + 1, ", ".join(raw_items))
    if index < len(items):
        at = items[index].start
        sep = _line_break_and_indent(text, at) or _item_separator(text, arr)
        return _splice(text, at, at, "".join(f"{raw},{sep}" for raw in raw_items))
    last = items[-1]
    sep = _line_break_and_indent(text, last.start) or _item_separator(text, arr)
    if arr.commas[-1] is not None:
        at = arr.commas[-1] + 1
        return _splice(text, at, at, "".join(f"{sep}{raw}," for raw in raw_items))
    return _splice(text, last.end, last.end, "".join(f",{sep}{raw}" for raw in raw_items))


def _item_separator(text: str, arr: Node) -> str:
    """The space after a comma between two items on one line (default one space)."""
    if len(arr.items) >= 2 and arr.commas[0] is not None:
        between = text[arr.commas[0] + 1 : arr.items[1].start]
        if between in ("", " "):
            return between
    return " "


def delete_items(text: str, arr: Node, start: int, stop: int) -> str:
    """Remove items ``start`` to ``stop - 1`` of ``arr`` (the inverse of an insert)."""
    items = arr.items
    if not 0 <= start < stop <= len(items):
        raise ConfigError("no such array items")
    if stop < len(items):
        return _splice(text, items[start].start, items[stop].start, "")
    if start == 0:
        end = arr.commas[stop - 1]
        return _splice(text, items[0].start, end + 1 if end is not None else items[-1].end, "")
    prev_comma = arr.commas[start - 1]
    assert prev_comma is not None
    if arr.commas[stop - 1] is not None:
        return _splice(text, prev_comma + 1, arr.commas[stop - 1] + 1, "")  # type: ignore[operator]
    return _splice(text, items[start - 1].end, items[-1].end, "")
