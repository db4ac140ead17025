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
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from toolpin.core.wire import identity_url
from toolpin.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

TRANSPORTS = ("auto", "streamable-http", "sse")
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
        from toolpin.core.headers import has_authorization

        return has_authorization(self.headers)


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
    """``'Name: value'`` with ``${env:VAR}`` expanded (:func:`toolpin.core.headers.parse_header`,
    from this process's environment by default); raises :class:`InputError`.

    The message never contains the value (it is usually a secret).
    """
    from toolpin.core.headers import parse_header as parse

    return parse(text, os.environ if environ is None else environ)


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
