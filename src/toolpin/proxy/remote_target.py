"""Which remote server ``toolpin run --url`` talks to: its URL, headers, id and label.

* The URL must be ``http`` or ``https`` with a host and no credentials; plain ``http`` is
  accepted only for a loopback host (a token sent in clear to another machine is refused).
* The **server id** (:func:`toolpin.pins.serverid.remote_server_id`) is keyed by the name
  and the URL's origin and path (:attr:`RemoteTarget.key_url`), so a query string, headers
  and tokens never change it and never reach a pin, a lock or an error.
* ``--header 'K: V'`` values may hold ``${env:VAR}`` (or ``${VAR}``), expanded from the
  environment at start, so secrets stay out of client config files. A missing variable
  refuses the start; the value is never printed.

Standard library only: this runs before anything else on ``toolpin run --url``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from toolpin.core.wire import identity_url
from toolpin.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

TRANSPORTS = ("auto", "streamable-http", "sse")
_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}$")
_ENV_REF = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")
_RESERVED = frozenset(
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
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


@dataclass(frozen=True)
class RemoteTarget:
    """A remote MCP server as ``toolpin run --url`` was told of it."""

    url: str
    name: str | None = None
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    transport: str = "auto"

    @property
    def key_url(self) -> str:
        """The URL as it identifies the server: scheme, host, port and path only."""
        return identity_url(self.url)

    @property
    def label(self) -> str:
        """``--name``, else host and path."""
        if self.name:
            return self.name
        parts = urlsplit(self.url)
        return f"{parts.hostname or '?'}{parts.path or '/'}"

    @property
    def static_authorization(self) -> bool:
        """Whether the user gave an ``Authorization`` header (then OAuth is not tried)."""
        return any(k.lower() == "authorization" for k, _ in self.headers)


def is_loopback_host(host: str) -> bool:
    """A host name or literal that is this machine."""
    host = host.lower().strip("[]")
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    return host.startswith("127.") and all(p.isdigit() for p in host.split("."))


def check_remote_url(url: str) -> str:
    """The URL when ``toolpin run --url`` may use it; raises :class:`InputError`."""
    if len(url) > 2048:
        raise InputError("the --url is longer than 2048 characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise InputError("the --url cannot be parsed") from None
    if parts.scheme not in ("http", "https"):
        raise InputError("the --url must start with https:// (or http:// for localhost)")
    if not parts.hostname:
        raise InputError("the --url has no host")
    if parts.username is not None or parts.password is not None:
        raise InputError(
            "the --url carries credentials (user:password@)",
            advice="Pass them as a header instead: --header 'Authorization: ...'",
        )
    if parts.fragment:
        raise InputError("the --url has a #fragment")
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        raise InputError(
            "the --url uses plain http to another machine; use https",
            advice="Plain http is accepted only for localhost, 127.0.0.1 and ::1.",
        )
    return url


def parse_header(text: str, environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """``'Name: value'`` with ``${env:VAR}`` expanded; raises :class:`InputError`.

    The message never contains the value (it is usually a secret).
    """
    name, colon, value = text.partition(":")
    name = name.strip()
    if not colon or not _HEADER_NAME.match(name):
        raise InputError("a --header must look like 'Name: value'")
    if name.lower() in _RESERVED:
        raise InputError(f"the header {name} is set by toolpin itself")
    env = os.environ if environ is None else environ

    def expand(match: re.Match[str]) -> str:
        variable = match.group(1)
        found = env.get(variable)
        if found is None:
            raise InputError(
                f"the header {name} names ${{env:{variable}}}, which is not set",
                advice="Set the variable in the environment the MCP client starts toolpin in.",
            )
        return found

    value = _ENV_REF.sub(expand, value.strip())
    if any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in value):
        raise InputError(f"the header {name} has a control character in its value")
    return name, value


def make_target(
    url: str,
    *,
    name: str | None = None,
    headers: Sequence[str] = (),
    transport: str = "auto",
    environ: Mapping[str, str] | None = None,
) -> RemoteTarget:
    """Check everything ``toolpin run --url`` was given; raises :class:`InputError`."""
    if transport not in TRANSPORTS:
        raise InputError(f"--transport must be one of {', '.join(TRANSPORTS)}")
    parsed = tuple(parse_header(h, environ) for h in headers)
    return RemoteTarget(check_remote_url(url), name or None, parsed, transport)
