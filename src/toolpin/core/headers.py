"""Static HTTP headers for a remote MCP server: ``'Name: value'`` with ``${env:VAR}``.

One reading for every place a remote server's headers come from (``toolpin run --url
--header``, the ``headers`` of a client config entry that ``toolpin lock`` probes), so a
header means the same thing when it is locked and when it is used:

* the name must be an RFC 9110 token and not a header toolpin sets itself;
* ``${env:VAR}`` and ``${VAR}`` in the value are filled from the environment given; a
  variable that is not set refuses the header, naming the variable, never the value;
* a control character in the value (after expansion) refuses it.

Values are usually secrets: no message of this module contains one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from toolpin.errors import InputError

HEADER_NAME: Final = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}$")
ENV_REF: Final = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")
RESERVED: Final = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "accept",
        "transfer-encoding",
        "connection",
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "last-event-id",
    }
)
"""Headers toolpin sets itself (the transport's own, and the request mirrors)."""
RESERVED_PREFIX: Final = "mcp-param-"
"""The 2026-07-28 ``Mcp-Param-*`` mirrors of tool arguments (set per request)."""


def parse_header(text: str, environ: Mapping[str, str]) -> tuple[str, str]:
    """``'Name: value'`` with ``${env:VAR}`` expanded; raises :class:`InputError`."""
    name, colon, value = text.partition(":")
    name = name.strip()
    if not colon or not HEADER_NAME.match(name):
        raise InputError("a header must look like 'Name: value'")
    lowered = name.lower()
    if lowered in RESERVED or lowered.startswith(RESERVED_PREFIX):
        raise InputError(f"the header {name} is set by toolpin itself")

    def expand(match: re.Match[str]) -> str:
        variable = match.group(1)
        found = environ.get(variable)
        if found is None:
            raise InputError(
                f"the header {name} names ${{env:{variable}}}, which is not set",
                advice="Set the variable in the environment toolpin runs in.",
            )
        return found

    value = ENV_REF.sub(expand, value.strip())
    if any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in value):
        raise InputError(f"the header {name} has a control character in its value")
    return name, value


def has_authorization(headers: tuple[tuple[str, str], ...]) -> bool:
    """Whether the headers carry an ``Authorization`` (then OAuth is not tried)."""
    return any(k.lower() == "authorization" for k, _ in headers)


__all__ = ["RESERVED", "has_authorization", "parse_header"]
