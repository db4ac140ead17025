"""HTTP pieces shared by the remote channels: the SSE decoder, message lines, the client.

Everything a remote server sends reaches the proxy's session as one newline-terminated
line per JSON-RPC message, exactly like a stdio server's output, so the session's checks
are the same code. A payload becomes a line only when it is one JSON object (the
session parses it strictly where it must); anything else is dropped, never forwarded.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

import httpx2

from toolpin import __version__
from toolpin.probe.ssrf import AddressPolicy, GuardedTransport, guarded_mounts

MAX_MESSAGE: Final = 64 << 20
"""Longest message accepted from a remote server (the stdio proxy's limit)."""
ACCEPT: Final = "application/json, text/event-stream"
USER_AGENT: Final = f"toolpin/{__version__}"
SESSION_ID: Final = re.compile(r"^[\x21-\x7e]{1,256}$")
"""An ``Mcp-Session-Id`` toolpin accepts: visible ASCII, at most 256 characters."""
NAME_BEARING: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_NEWLINES: Final = re.compile(rb"[\r\n]")


class TransportFault(Exception):
    """The remote server did something toolpin cannot classify; fixed text only."""


def message_line(payload: bytes) -> bytes | None:
    """One JSON-RPC message as a proxy line, or ``None`` when it is not one JSON object.

    A raw CR or LF can only be whitespace between tokens in valid JSON (inside a string
    it must be escaped), so it is replaced by a space once the payload parsed.
    """
    stripped = payload.strip()
    if not stripped.startswith(b"{"):
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    if _NEWLINES.search(stripped):
        stripped = _NEWLINES.sub(b" ", stripped)
    return stripped + b"\n"


def json_body_lines(body: bytes) -> list[bytes] | None:
    """The lines of an ``application/json`` body: one object, or a batch array."""
    stripped = body.strip()
    if stripped.startswith(b"["):
        try:
            value = json.loads(stripped)
        except (ValueError, RecursionError):
            return None
        if not isinstance(value, list) or not all(isinstance(x, dict) for x in value):
            return None
        from toolpin.core.canonical import parse_json
        from toolpin.errors import JSONError

        try:
            parse_json(stripped)  # a batch is re-encoded: refuse what a strict parse refuses
        except JSONError:
            return None
        return [json.dumps(x, ensure_ascii=False).encode() + b"\n" for x in value]
    line = message_line(stripped)
    return None if line is None else [line]


class SseDecoder:
    """An incremental ``text/event-stream`` decoder (the WHATWG rules), with a size cap.

    :meth:`feed` returns the complete events as ``(event type, data)``; comments,
    ``id:`` and ``retry:`` lines are read and discarded. An event (or a line) larger
    than ``max_event`` raises :class:`TransportFault`.
    """

    def __init__(self, max_event: int = MAX_MESSAGE) -> None:
        self._parts: list[bytes] = []  # the line being read
        self._held = 0
        self._cr = False  # the last chunk ended in CR: a LF next is part of that line end
        self._data: list[bytes] = []
        self._size = 0
        self._event = b""
        self._max = max_event

    def feed(self, chunk: bytes) -> list[tuple[str, bytes]]:
        out: list[tuple[str, bytes]] = []
        start = 0
        if self._cr and chunk[:1] == b"\n":
            start = 1
        self._cr = False
        while True:
            found = _NEWLINES.search(chunk, start)
            if found is None:
                break
            end = found.start()
            if chunk[end] == 0x0D:
                if end + 1 == len(chunk):
                    self._cr = True
                    nxt = end + 1
                else:
                    nxt = end + 2 if chunk[end + 1] == 0x0A else end + 1
            else:
                nxt = end + 1
            if self._parts:
                self._parts.append(chunk[start:end])
                line = b"".join(self._parts)
                self._parts, self._held = [], 0
            else:
                line = chunk[start:end]
            start = nxt
            self._line(line, out)
        if start < len(chunk):
            rest = chunk[start:]
            self._parts.append(rest)
            self._held += len(rest)
            if self._held + self._size > self._max:
                raise TransportFault(f"an event larger than {self._max >> 20} MiB")
        return out

    def _line(self, line: bytes, out: list[tuple[str, bytes]]) -> None:
        if not line:
            if self._data:
                event = self._event.decode("utf-8", "replace") or "message"
                out.append((event, b"\n".join(self._data)))
            self._data, self._size, self._event = [], 0, b""
            return
        if line.startswith(b":"):
            return
        fieldname, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if fieldname == b"data":
            self._size += len(value) + 1
            if self._size > self._max:
                raise TransportFault(f"an event larger than {self._max >> 20} MiB")
            self._data.append(value)
        elif fieldname == b"event":
            self._event = value[:64]


def new_client(policy: AddressPolicy) -> httpx2.Client:
    """An ``httpx2`` client through the address guard; redirects are never followed for
    us (the channel decides). The environment's proxies (``HTTPS_PROXY``, ``NO_PROXY``...)
    are used the way ``httpx2``'s ``trust_env`` uses them, with the target still checked
    by the guard (:func:`toolpin.probe.ssrf.guarded_mounts`)."""
    return httpx2.Client(
        transport=GuardedTransport(policy),
        mounts=guarded_mounts(policy),
        follow_redirects=False,
        trust_env=False,
        headers={"User-Agent": USER_AGENT},
        timeout=httpx2.Timeout(30.0, read=None),
    )


def same_origin(a: httpx2.URL, b: httpx2.URL) -> bool:
    return (a.scheme, a.host, a.port) == (b.scheme, b.host, b.port)


def header_value(value: str) -> str:
    """A header value as the 2026-07-28 revision carries it (base64 sentinel if needed)."""
    plain = value.isascii() and value.isprintable() and value == value.strip()
    if plain and not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    import base64

    return f"=?base64?{base64.b64encode(value.encode('utf-8')).decode('ascii')}?="


def parse_message(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
