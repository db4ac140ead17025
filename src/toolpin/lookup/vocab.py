"""The closed vocabulary of every lookup answer.

An answer is made of fixed keys, integers, booleans, ``null`` and strings of one alphabet:
:data:`TOKEN_CHARS` for names, ids, hashes, dates and label keys (names are *reduced* to
it by :func:`safe_name`), plus the space of the fixed text templates. The text rendering
of an answer (:func:`render`) is built from the structured answer alone, so it cannot
carry anything the structured answer does not. :func:`check_closed` is the last gate
before an answer leaves: a string outside the alphabet raises instead of being sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

TOKEN_CHARS: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.@/:+=-"
"""Names, ids, hashes (hex and base64), ISO dates and label keys."""
TEXT_CHARS: Final = TOKEN_CHARS + " ,()\n"
"""The text rendering: tokens plus the punctuation of the fixed templates."""
MAX_NAME_CHARS: Final = 96
TEXT_KEYS: Final = frozenset({"summary", "review"})
"""Members whose value is a fixed template filled with tokens (spaces allowed)."""

_NOT_TOKEN: Final = re.compile(f"[^{re.escape(TOKEN_CHARS)}]+")
_TOKEN: Final = re.compile(f"[{re.escape(TOKEN_CHARS)}]*")
_TEXT: Final = re.compile(f"[{re.escape(TEXT_CHARS)}]*")
HEX16: Final = re.compile(r"[0-9a-f]{16}")
HEX64: Final = re.compile(r"[0-9a-f]{64}")
ISO_TIME: Final = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?Z")
LABEL_KEY: Final = re.compile(r"[a-z][a-z0-9-]{0,39}")


def safe_name(text: object) -> str:
    """``text`` reduced to :data:`TOKEN_CHARS`: every run of other characters becomes one
    ``_``, the result is cut to :data:`MAX_NAME_CHARS`; anything not a string is ``_``."""
    if not isinstance(text, str):
        return "_"
    reduced = _NOT_TOKEN.sub("_", text)[:MAX_NAME_CHARS]
    return reduced or "_"


def hex_or_none(value: object, pattern: re.Pattern[str] = HEX64) -> str | None:
    """``value`` when it is lower-case hex of the pattern's length, else ``None``."""
    return value if isinstance(value, str) and pattern.fullmatch(value) else None


def time_or_none(value: object) -> str | None:
    """``value`` when it is an ISO 8601 UTC time (``2026-11-30T04:05:51Z``), else ``None``."""
    return value if isinstance(value, str) and ISO_TIME.fullmatch(value) else None


def label_keys(keys: Sequence[object]) -> list[str]:
    """Sorted, unique label keys; anything that is not a label key's shape is dropped."""
    return sorted({k for k in keys if isinstance(k, str) and LABEL_KEY.fullmatch(k)})


class VocabularyError(Exception):
    """An answer held a string outside the alphabet (a bug: the answer is not sent)."""


def check_closed(value: Any, *, text: bool = False) -> None:
    """Raise :class:`VocabularyError` unless every key and string in ``value`` is in the
    alphabet (:data:`TEXT_CHARS` when ``text``, else :data:`TOKEN_CHARS` for values and
    keys alike, with spaces allowed only in the members of :data:`TEXT_KEYS`)."""
    pattern = _TEXT if text else _TOKEN
    if isinstance(value, str):
        if not pattern.fullmatch(value):
            raise VocabularyError("a string outside the lookup alphabet")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str) or not _TOKEN.fullmatch(key):
                raise VocabularyError("a key outside the lookup alphabet")
            check_closed(item, text=text or key in TEXT_KEYS)
    elif isinstance(value, list | tuple):
        for item in value:
            check_closed(item, text=text)
    elif value is not None and not isinstance(value, bool | int):
        raise VocabularyError(f"a {type(value).__name__} in an answer")


def _scalar(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def render(answer: Mapping[str, Any], *, indent: str = "") -> str:
    """The text form of a structured answer: one ``key: value`` line per member, nested
    members indented, lists of scalars joined with commas. Built only from ``answer``."""
    lines: list[str] = []
    first = [k for k in ("status", "summary") if k in answer]
    ordered = [*first, *(k for k in answer if k not in first)]
    for key in ordered:
        value = answer[key]
        if isinstance(value, Mapping):
            lines.append(f"{indent}{key}:")
            lines.append(render(value, indent=indent + "  "))
        elif isinstance(value, list) and any(isinstance(v, Mapping) for v in value):
            lines.append(f"{indent}{key}: ({len(value)})")
            for item in value:
                if isinstance(item, Mapping):
                    lines.append(f"{indent}  -")
                    lines.append(render(item, indent=indent + "    "))
                else:
                    lines.append(f"{indent}  - {_scalar(item)}")
        elif isinstance(value, list):
            lines.append(f"{indent}{key}: {', '.join(_scalar(v) for v in value) or 'none'}")
        else:
            lines.append(f"{indent}{key}: {_scalar(value)}")
    return "\n".join(line for line in lines if line)
