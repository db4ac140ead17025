"""MCP wire knowledge shared by the proxy and the probe (no I/O, standard library only).

* the two protocol eras: the handshake era (``initialize`` + ``notifications/initialized``,
  revisions 2024-11-05 ... 2025-11-25) and the 2026-07-28 revision (no handshake,
  ``server/discover``, ``_meta`` on every request);
* :class:`ListingCollector`, a transport-free state machine that drains every page of
  ``tools/list``, ``prompts/list``, ``resources/list`` and ``resources/templates/list``
  (cursor-loop detection, a page cap) and turns them into a
  :class:`~toolpin.core.snapshot.Snapshot`. The caller sends the requests it returns and
  feeds it the parsed responses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

from toolpin.core.snapshot import KINDS, Identity, Kind, Snapshot, snapshot_from_results
from toolpin.errors import ListingError

HANDSHAKE_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSION: Final = "2026-07-28"
LATEST_HANDSHAKE: Final = "2025-11-25"
META_PROTOCOL: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_CLIENT_CAPS: Final = "io.modelcontextprotocol/clientCapabilities"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"

LIST_METHODS: Final = {kind.method: kind for kind in KINDS}
MAX_PAGES: Final = 100
"""Most pages accepted for one listing (a server that pages forever cannot stall us)."""

# JSON-RPC error codes toolpin sends to a client (outside the reserved -32768..-32000).
DRIFT_ERROR: Final = -31042
UNVERIFIED_ERROR: Final = -31043


def request(id_: Any, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A JSON-RPC request object."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        msg["params"] = dict(params)
    return msg


def error_response(id_: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response object."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": error}


def client_meta(params: Any) -> dict[str, Any] | None:
    """The 2026-07-28 ``_meta`` of a client request, when it carries a protocol version."""
    if isinstance(params, dict):
        meta = params.get("_meta")
        if isinstance(meta, dict) and isinstance(meta.get(META_PROTOCOL), str):
            return meta
    return None


def _line(value: Any) -> str | None:
    if not isinstance(value, str) or not value or value != value.strip():
        return None
    if any(ord(ch) < 0x20 for ch in value):
        return None
    return value


def _identity(info: Any, protocol: Any) -> Identity | None:
    # Self-reported and display-only: a server whose name is not a usable one-line text
    # has no identity; an unusable version is None (null in JSON, "(none)" when shown).
    if not isinstance(info, dict):
        return None
    name = _line(info.get("name"))
    if name is None:
        return None
    return Identity(name, _line(info.get("version")), _line(protocol))


def identity_from_initialize(result: Mapping[str, Any]) -> Identity | None:
    """serverInfo + protocolVersion of an initialize result (display only; never trusted)."""
    return _identity(result.get("serverInfo"), result.get("protocolVersion"))


def identity_from_discover(result: Mapping[str, Any]) -> Identity | None:
    """serverInfo from a ``server/discover`` result's ``_meta``."""
    meta = result.get("_meta")
    if not isinstance(meta, dict):
        return None
    return _identity(meta.get(META_SERVER_INFO), MODERN_VERSION)


def kinds_offered(capabilities: Any) -> tuple[Kind, ...]:
    """The listings a server offers: tools always (servers often forget to declare them),
    prompts when declared, resources and templates when ``resources`` is declared."""
    caps = capabilities if isinstance(capabilities, dict) else {}
    kinds = [Kind.TOOL]
    if "prompts" in caps:
        kinds.append(Kind.PROMPT)
    if "resources" in caps:
        kinds.extend((Kind.RESOURCE, Kind.TEMPLATE))
    return tuple(kinds)


class CollectError(Exception):
    """The listing could not be collected; ``reason`` is fixed text (never server text)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class _KindState:
    kind: Kind
    pages: list[dict[str, Any]] = field(default_factory=list)
    cursors: set[str] = field(default_factory=set)
    done: bool = False
    failed: bool = False


class ListingCollector:
    """Drains every page of the listings a server offers.

    ``meta`` (2026-07-28) is copied into every request so that the server answers the
    collector exactly as it would answer the client. Call :meth:`start`, send the
    requests, then pass each response to :meth:`on_response` and send what it returns,
    until :attr:`done`. An error response to a listing the server offers counts as an
    empty listing (the client would get the same error); anything malformed raises
    :class:`CollectError`.
    """

    def __init__(
        self,
        kinds: tuple[Kind, ...],
        *,
        meta: Mapping[str, Any] | None = None,
        id_prefix: str,
        max_pages: int = MAX_PAGES,
    ) -> None:
        self._states = {kind: _KindState(kind) for kind in kinds}
        self._meta = dict(meta) if meta is not None else None
        self._prefix = id_prefix
        self._counter = 0
        self._pending: dict[str, Kind] = {}
        self._max_pages = max_pages

    def owns(self, id_: Any) -> bool:
        """Whether a response id answers one of the collector's requests."""
        return isinstance(id_, str) and id_ in self._pending

    @property
    def done(self) -> bool:
        """True when every offered listing has been drained."""
        return all(state.done for state in self._states.values())

    def pending_ids(self) -> list[str]:
        """Ids of requests still waiting for an answer."""
        return list(self._pending)

    def _request(self, kind: Kind, cursor: str | None) -> dict[str, Any]:
        self._counter += 1
        id_ = f"{self._prefix}-{self._counter}"
        self._pending[id_] = kind
        params: dict[str, Any] = {}
        if cursor is not None:
            params["cursor"] = cursor
        if self._meta is not None:
            params["_meta"] = dict(self._meta)
        return request(id_, kind.method, params if params else None)

    def start(self) -> list[dict[str, Any]]:
        """The first page request of every listing (they may be sent at once)."""
        return [self._request(kind, None) for kind in self._states]

    def on_response(self, message: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Take one response; returns the follow-up requests (possibly none)."""
        id_ = message.get("id")
        if not isinstance(id_, str) or id_ not in self._pending:
            raise CollectError("an answer to an unknown request")
        kind = self._pending.pop(id_)
        state = self._states[kind]
        if "error" in message:
            state.failed = True
            state.done = True
            state.pages = []
            return []
        result = message.get("result")
        if not isinstance(result, dict):
            raise CollectError(f"a malformed {kind.method} response")
        items = result.get(kind.list_member)
        if not isinstance(items, list):
            raise CollectError(f"a {kind.method} response without a {kind.list_member} array")
        state.pages.append(result)
        cursor = result.get("nextCursor")
        if cursor is None or cursor == "":
            # Absent, null or "" ends the listing (the hash spec's rule; a server that
            # means "" as a real cursor is still caught by the checks on client listings).
            state.done = True
            return []
        if not isinstance(cursor, str):
            raise CollectError(f"an invalid nextCursor in {kind.method}")
        if cursor in state.cursors:
            raise CollectError(f"the server repeated a page cursor in {kind.method}")
        if len(state.pages) >= self._max_pages:
            raise CollectError(f"{kind.method} has more than {self._max_pages} pages")
        state.cursors.add(cursor)
        return [self._request(kind, cursor)]

    def snapshot(
        self,
        *,
        instructions: str | None,
        identity: Identity | None,
    ) -> Snapshot:
        """The collected snapshot (every offered listing; the others are empty)."""
        results: dict[Kind, list[dict[str, Any]]] = {}
        for kind in KINDS:
            state = self._states.get(kind)
            results[kind] = state.pages if state is not None else []
        try:
            return snapshot_from_results(
                results, instructions=instructions, instructions_known=True, identity=identity
            )
        except ListingError as exc:
            raise CollectError(exc.message) from None


def page_items(kind: Kind, result: Mapping[str, Any]) -> list[Any]:
    """The definitions of one listing page (raises :class:`CollectError` when malformed)."""
    items = result.get(kind.list_member)
    if not isinstance(items, list):
        raise CollectError(f"a {kind.method} response without a {kind.list_member} array")
    return items


def identity_url(url: str) -> str:
    """A remote server's URL as it identifies the server: ``scheme://host:port/path``
    (lowercase scheme and host, the default port written out; no query, no credentials)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        port = 443 if scheme == "https" else 80
    return f"{scheme}://{host}:{port}{parts.path or '/'}"
