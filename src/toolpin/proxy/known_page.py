"""A listing answer whose definitions are all known, read without hashing them again.

Mid-session, a client lists again and again; a server may send the same definitions in
another order, with another id, or with another ``_meta`` each time, so the page's bytes
differ and :meth:`Session._verified_again` (same bytes) does not apply. This module reads
such a page and gives the ``key -> hash`` map of its definitions, reusing the hash of
every definition whose exact text it has seen before.

Why a remembered definition needs no second check: an array element is a complete JSON
value, and a JSON object's value is fixed by its text from ``{`` to its matching ``}``
(nothing after it can change how it parses). So when the text at an element's start
equals, character for character, an element text that was read strictly before (the same
scanner and checks as :func:`toolpin.proxy.classify.classify` with ``strict=True``) and
hashed, the element *is* that definition: same parse, same strictness verdict, same hash.
Every other byte of the page is read strictly here: the envelope by the SDK shapes that
:func:`classify` accepts, the result's members one by one (repeated or case-folded names
refused), and every unknown element by the strict scanner, then hashed and remembered.

:meth:`KnownPages.read` answers only "this page, complete, holds exactly these
definitions"; anything else (a cursor, a non-object, an unknown shape, a parse problem,
a lone surrogate escape anywhere) is ``None``, and the caller takes the general path,
which classifies the line from scratch. The memory is bounded (:data:`MAX_TEXT`).
"""

from __future__ import annotations

import bisect
from typing import Any, Final

from toolpin.core.snapshot import Definition, Kind
from toolpin.proxy.classify import (
    _SURROGATE_ESCAPE,
    _skip,
    _strict_scan,
    after_value,
    scanstring,
    sdk_envelope,
)

PREFIX: Final = 40
"""Characters of an element's start that index the remembered texts."""
MAX_TEXT: Final = 16 << 20
"""Characters of remembered element text, in all (then the memory starts again)."""
MAX_ELEMENT: Final = 1 << 20
"""Longest element text remembered."""


class KnownPages:
    """Element texts read strictly before, with the definition each one is."""

    def __init__(self) -> None:
        self._by_text: dict[str, tuple[str, str]] = {}
        # texts by their first PREFIX characters, each group sorted, with its longest
        self._by_prefix: dict[str, tuple[list[str], int]] = {}
        self._size = 0

    def _remember(self, text: str, definition: Definition) -> None:
        if len(text) > MAX_ELEMENT or text in self._by_text:
            return
        if self._size + len(text) > MAX_TEXT:
            self._by_text.clear()
            self._by_prefix.clear()
            self._size = 0
        self._by_text[text] = (definition.key, definition.hash)
        group, longest = self._by_prefix.get(text[:PREFIX], ([], 0))
        bisect.insort(group, text)
        self._by_prefix[text[:PREFIX]] = (group, max(longest, len(text)))
        self._size += len(text)

    def read(self, text: str, kind: Kind) -> tuple[Any, tuple[int, int], dict[str, str]] | None:
        """``(id, where the id is, {key: hash})`` of a complete one-page answer ``text``
        (a decoded line, without its newline) in one of the SDKs' shapes
        (:func:`~toolpin.proxy.classify.sdk_envelope`) listing ``kind``; ``None`` when it
        is anything else."""
        read = sdk_envelope(text, lambda t, i: self._result(t, i, kind))
        # A lone surrogate escape anywhere: the general path decides (looked for last,
        # so that a line that is no listing costs no scan of its whole text).
        if read is None or _SURROGATE_ESCAPE.search(text) is not None:
            return None
        return read

    def _result(self, text: str, i: int, kind: Kind) -> tuple[dict[str, str], int] | None:
        """The result object at ``i``: its definitions, and where it ends."""
        if text[i] != "{":
            return None
        names: set[str] = set()
        items: dict[str, str] | None = None
        i = _skip(text, i + 1).end()
        if text[i] == "}":
            return None  # no list member
        while True:
            if text[i] != '"':
                return None
            name, i = scanstring(text, i + 1)
            folded = name.casefold()
            if folded in names:
                return None  # repeated, or equal under case folding
            names.add(folded)
            i = _skip(text, i).end()
            if text[i] != ":":
                return None
            i = _skip(text, i + 1).end()
            if name == kind.list_member:
                read = self._items(text, i, kind)
                if read is None:
                    return None
                items, i = read
            elif name == "nextCursor":
                return None  # pages of a longer listing: the general path tracks them
            else:
                value, i = _strict_scan(text, i)
                del value  # checked strictly; not pinned (``_meta``, ``ttlMs`` ...)
            char, i = after_value(text, i)
            if char == ",":
                continue
            if char != "}":
                return None
            break
        if items is None:
            return None
        return items, i + 1

    def _items(self, text: str, i: int, kind: Kind) -> tuple[dict[str, str], int] | None:
        if text[i] != "[":
            return None
        items: dict[str, str] = {}
        i = _skip(text, i + 1).end()
        if text[i] == "]":
            return items, i + 1
        by_prefix, by_text = self._by_prefix, self._by_text
        while True:
            if text[i] != "{":
                return None
            # The remembered element whose text starts here, if any. The remembered
            # texts are prefix-free (an object's text ends at its closing brace, so no
            # complete object's text starts another's), so the one that starts
            # text[i:], if any, is the greatest remembered text not above it: one
            # bisection in the group that shares its opening, however many share it.
            found = by_prefix.get(text[i : i + PREFIX])
            element = None
            if found is not None:
                group, longest = found
                window = text[i : i + longest]
                at = bisect.bisect_right(group, window) - 1
                if at >= 0 and window.startswith(group[at]):
                    element = group[at]
            if element is not None:
                key, digest = by_text[element]
                i += len(element)
            else:
                value, end = _strict_scan(text, i)
                if type(value) is not dict:
                    return None
                definition = Definition.of(kind, value)
                self._remember(text[i:end], definition)
                key, digest, i = definition.key, definition.hash, end
            if key in items:
                return None  # a repeated key: the general path says so
            items[key] = digest
            char, i = after_value(text, i)
            if char == ",":
                continue
            if char != "]":
                return None
            return items, i + 1
