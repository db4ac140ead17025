"""Which server is which: an id from its name or its command line, and a label.

With ``--name`` the id follows the name (:func:`name_id`): the pin is found by the name,
and the command is part of what is pinned (its id, :func:`server_id`), so a changed
command under a known name is a change to review, never a new pin. Without a name the
id is the command's (:func:`server_id`).

The command id is the first 16 hex characters of SHA-256 over the RFC 8785 form of the
argv as a JSON array, so ``["a b"]`` and ``["a", "b"]`` differ (joining with spaces would
not). A name id hashes the JSON object ``{"name": NAME}``, whose canonical form can never
equal an array's, so the two kinds of id cannot collide.
It is computed from the server command as written after ``--`` (never from a wrapper), so
wrapping a config keeps its pins. The argv itself is never stored or printed: it often
carries API keys (a named pin keeps it redacted, :func:`toolpin.core.redact.redact_argv`,
beside this id, which stays the hash of the real argv). The label is ``--name`` when
given, else the command's base name and its argument count.
"""

from __future__ import annotations

import os

from toolpin.errors import InputError

TYPE_CHECKING = False  # typing is not imported on the start path
if TYPE_CHECKING:
    from collections.abc import Sequence

ID_LENGTH = 16
_HEX = frozenset("0123456789abcdef")


# RFC 8785 string escapes (those of JSON.stringify): the two-character forms, else
# \u00xx in lowercase hex for the other control characters.
_ESCAPES = {i: f"\\u{i:04x}" for i in range(0x20)}
_ESCAPES.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"})
_ESCAPES.update({0x22: '\\"', 0x5C: "\\\\"})


def _sha256_hex(data: bytes) -> str:
    # The interpreter's built-in SHA-256 saves loading OpenSSL before the server starts.
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:  # pragma: no cover - a Python without the built-in module
            from hashlib import sha256
    digest: str = sha256(data).hexdigest()
    return digest


def server_id(argv: Sequence[str]) -> str:
    """The id of the server started by ``argv``.

    It runs before the server is started, so it imports nothing heavy: an array of
    strings is written in its RFC 8785 form directly (no spaces, raw non-ASCII, the
    escapes above); anything else (a lone surrogate) takes the canonical module.
    """
    items = list(argv)
    data: bytes | None = None
    if all(type(x) is str for x in items):
        text = "[" + ",".join('"' + x.translate(_ESCAPES) + '"' for x in items) + "]"
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            data = None
    if data is None:
        from toolpin.core.canonical import canonical_bytes, normalize

        data = canonical_bytes(normalize(items))
    return _sha256_hex(data)[:ID_LENGTH]


def name_id(name: str) -> str:
    """The id of the server called ``name`` (``--name``)."""
    text = '{"name":"' + name.translate(_ESCAPES) + '"}'
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the canonical module escapes it
        from toolpin.core.canonical import canonical_bytes, normalize

        data = canonical_bytes(normalize({"name": name}))
    return _sha256_hex(data)[:ID_LENGTH]


def remote_server_id(url: str, name: str | None) -> str:
    """The id of a remote server: its name and :func:`identity_url`, never its headers."""
    from toolpin.core.wire import identity_url  # not on the stdio start path

    return server_id(["toolpin-remote", name or "", identity_url(url)])


def default_label(argv: Sequence[str]) -> str:
    """``node [1 arg]``: the command's base name and how many arguments it has."""
    if not argv:
        return "(empty command)"
    command = argv[0]
    if "\\" in command:
        import ntpath

        base = ntpath.basename(ntpath.normpath(command))
    else:
        base = os.path.basename(os.path.normpath(command))
    base = base or command
    if not (base.isascii() and base.isprintable()):
        from toolpin.core.render import visible

        base = visible(base)
    count = len(argv) - 1
    if count == 0:
        return base
    return f"{base} [{count} arg{'s' if count != 1 else ''}]"


def check_id(text: str) -> str:
    """Validate a server id typed by a user (exit 2 with one line when malformed)."""
    if len(text) != ID_LENGTH or not set(text) <= _HEX:
        from toolpin.core.render import clip, visible

        raise InputError(
            f"{clip(visible(text), 40)!r} is not a server id "
            "(16 lowercase hex characters; see `toolpin list`)"
        )
    return text
