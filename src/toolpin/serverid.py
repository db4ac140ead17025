"""Which server is which: an id from the command line, and a label safe to show.

The id is the first 16 hex characters of SHA-256 over the RFC 8785 form of the argv as a
JSON array, so ``["a b"]`` and ``["a", "b"]`` differ (joining with spaces would not).
It is computed from the server command as written after ``--`` (never from a wrapper), so
wrapping a config keeps its pins. The argv itself is never stored or printed: it often
carries API keys. The label is ``--name`` when given, else the command's base name and
its argument count.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import PurePath, PureWindowsPath
from typing import Final

from toolpin.core.canonical import canonical_bytes, normalize
from toolpin.core.render import clip, visible
from toolpin.errors import InputError

ID_LENGTH: Final = 16
_ID: Final = re.compile(r"[0-9a-f]{16}")


def server_id(argv: Sequence[str]) -> str:
    """The id of the server started by ``argv``."""
    return hashlib.sha256(canonical_bytes(normalize(list(argv)))).hexdigest()[:ID_LENGTH]


def default_label(argv: Sequence[str]) -> str:
    """``node [1 arg]``: the command's base name and how many arguments it has."""
    if not argv:
        return "(empty command)"
    command = argv[0]
    base = PureWindowsPath(command).name if "\\" in command else PurePath(command).name
    base = visible(base or command)
    count = len(argv) - 1
    if count == 0:
        return base
    return f"{base} [{count} arg{'s' if count != 1 else ''}]"


def check_id(text: str) -> str:
    """Validate a server id typed by a user (exit 2 with one line when malformed)."""
    if not _ID.fullmatch(text):
        raise InputError(
            f"{clip(visible(text), 40)!r} is not a server id "
            "(16 lowercase hex characters; see `toolpin list`)"
        )
    return text
