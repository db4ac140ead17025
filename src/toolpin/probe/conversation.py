"""The probe conversation, written once: discover, fall back to initialize, collect.

A transport (:mod:`toolpin.probe.stdio`, :mod:`toolpin.probe.http`) only moves JSON-RPC
messages; everything the probe decides is here, the same for every transport (the model
is httpx's ``_transports/base.py``: one small interface, several transports).

* :class:`Transport` opens connections (:meth:`Transport.connect`): a stdio transport
  starts one server process per connection, an HTTP transport starts a new session.
* :class:`Channel` is one connection. :meth:`Channel.send` never blocks for an answer
  and never raises: what comes back, and any trouble, arrives as an :data:`Event` in the
  conversation's :class:`Inbox` (one inbox for every connection, so two can be awaited
  at once).

The conversation (:func:`converse`) has one deadline, the caller's ``timeout``:

1. ``server/discover`` (2026-07-28) on a first connection. A result: the modern era.
2. An error of the "method not found" class (-32600, -32601, -32602, or the legacy
   range -32000..-32019) means a handshake-era server: ``initialize`` is sent on the
   same connection. Any other error (such as -32022, "unsupported protocol version") or
   a connection that ends without an answer: ``initialize`` on a *fresh* connection, so
   a server that serves 2026-07-28 on the first one is never sent ``initialize`` there.
3. A server that says nothing for ``fallback_after`` seconds may be a handshake-era
   server that ignores unknown methods, or just a slow one (``uvx`` on a cold cache):
   ``initialize`` is sent on a fresh connection *and the first one is kept*. Whichever
   answers first is used; a late discover answer is used, not dropped.
4. Every page of every offered listing is drained with
   :class:`toolpin.core.wire.ListingCollector` (the proxy's code, so hashes agree).

Requests the server sends meanwhile are answered (``ping``; ``roots/list`` with an empty
list when the probe declared roots; "method not found" otherwise). No tool is ever
called. Error messages are fixed text, never server text.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol, TypeAlias

from toolpin.core.snapshot import Identity, Snapshot
from toolpin.core.wire import (
    LATEST_HANDSHAKE,
    META_CLIENT_CAPS,
    META_CLIENT_INFO,
    META_PROTOCOL,
    MODERN_VERSION,
    CollectError,
    ListingCollector,
    identity_from_discover,
    identity_from_initialize,
    kinds_offered,
    request,
)
from toolpin.errors import ProbeError

Era = Literal["auto", "modern", "handshake"]
"""Which protocol era to speak: ``auto`` (discover, then initialize) or one of them."""
SpokenEra = Literal["modern", "handshake"]
ERAS: Final = ("auto", "modern", "handshake")
FALLBACK_AFTER: Final = 10.0
"""Seconds of silence after ``server/discover`` before ``initialize`` is also tried on a
fresh connection (at most half the timeout). The first connection keeps listening."""
LEGACY_RANGE: Final = range(-32019, -31999)
"""JSON-RPC server-error codes the 2026-07-28 policy leaves to older servers."""
METHOD_NOT_FOUND_CLASS: Final = frozenset({-32600, -32601, -32602})


@dataclass(frozen=True)
class ProbeResult:
    """What a server told the probe."""

    snapshot: Snapshot
    era: SpokenEra
    """``"modern"`` (2026-07-28, server/discover) or ``"handshake"`` (initialize)."""
    protocol_version: str | None
    identity: Identity | None


# ------------------------------------------------------------------ transport protocol


class Channel(Protocol):
    """One connection to the server."""

    def send(self, message: Mapping[str, Any]) -> None:
        """Send one JSON-RPC message. Never raises; answers and failures arrive as events."""

    def close(self) -> None:
        """End the connection (and whatever it started). Idempotent."""


class Transport(Protocol):
    """Opens connections to one server."""

    def connect(self, inbox: Inbox, *, id_prefix: str, deadline: float) -> Channel:
        """A fresh connection whose events go to ``inbox``. Raises :class:`ProbeError`
        when it cannot be opened at all. ``id_prefix`` starts the id of every request the
        conversation sends; ``deadline`` (``time.monotonic()``) ends the conversation."""

    def close(self) -> None:
        """Release what the transport holds (after every channel is closed)."""


@dataclass(frozen=True)
class Received:
    """A JSON-RPC message from the server (a response, a request or a notification)."""

    channel: Channel
    message: dict[str, Any]


@dataclass(frozen=True)
class Refused:
    """The transport refused a request in a way that means "not this era" (an HTTP 404
    or 405, an answer that is not JSON-RPC)."""

    channel: Channel
    request_id: str


@dataclass(frozen=True)
class Failed:
    """The connection cannot go on. ``final``: no other connection would do better (an
    output flood, an answer that is not strict JSON, a refused address, authorization)."""

    channel: Channel
    error: ProbeError
    final: bool = False


Event: TypeAlias = Received | Refused | Failed


class Inbox:
    """Where every connection of one conversation posts its events (thread-safe)."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Event] = queue.Queue()

    def put(self, event: Event) -> None:
        self._queue.put(event)

    def get(self, until: float) -> Event:
        """The next event; :class:`TimeoutError` at ``until`` (``time.monotonic()``)."""
        remaining = until - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        try:
            return self._queue.get(timeout=remaining)
        except queue.Empty:
            raise TimeoutError from None


# ------------------------------------------------------------------ the conversation


def is_legacy_refusal(error: Any) -> bool:
    """True for a ``server/discover`` error that only a handshake-era server sends
    ("method not found" and its kin): ``initialize`` may follow on the same connection."""
    code = error.get("code") if isinstance(error, dict) else None
    if not isinstance(code, int) or isinstance(code, bool):
        return False
    return code in METHOD_NOT_FOUND_CLASS or code in LEGACY_RANGE


@dataclass
class _Attempt:
    method: Literal["server/discover", "initialize"]
    request_id: str


@dataclass(frozen=True)
class _Opening:
    channel: Channel
    result: dict[str, Any]
    era: SpokenEra


def converse(
    transport: Transport,
    *,
    timeout: float,
    era: Era = "auto",
    capabilities: Mapping[str, Any] | None = None,
    client_info: Mapping[str, Any],
    id_prefix: str = "toolpin-probe",
    fallback_after: float = FALLBACK_AFTER,
) -> ProbeResult:
    """List everything the server behind ``transport`` offers, within ``timeout`` seconds
    in all. Raises :class:`ProbeError` (fixed text). Closes every connection it opened
    (not the transport)."""
    if era not in ERAS:
        raise ProbeError(f"unknown protocol era {era!r} (auto, modern or handshake)")
    talk = _Talk(
        transport,
        deadline=time.monotonic() + timeout,
        capabilities=dict(capabilities or {}),
        client_info=dict(client_info),
        id_prefix=f"{id_prefix}-{os.getpid()}-{os.urandom(3).hex()}",
    )
    try:
        opening = talk.open(era, min(fallback_after, timeout / 2))
        return talk.collect(opening)
    except TimeoutError:
        raise ProbeError(f"the server did not answer within {timeout:g}s") from None
    finally:
        talk.close_all()


class _Talk:
    def __init__(
        self,
        transport: Transport,
        *,
        deadline: float,
        capabilities: dict[str, Any],
        client_info: dict[str, Any],
        id_prefix: str,
    ) -> None:
        self.transport = transport
        self.deadline = deadline
        self.capabilities = capabilities
        self.client_info = client_info
        self.prefix = id_prefix
        self.inbox = Inbox()
        self.channels: list[Channel] = []
        self._closing: list[threading.Thread] = []
        self.attempts: dict[int, tuple[Channel, _Attempt]] = {}
        self._inits = 0
        self.meta = {
            META_PROTOCOL: MODERN_VERSION,
            META_CLIENT_INFO: client_info,
            META_CLIENT_CAPS: capabilities,
        }

    # -- connections ------------------------------------------------------------

    def _connect(self) -> Channel:
        channel = self.transport.connect(self.inbox, id_prefix=self.prefix, deadline=self.deadline)
        self.channels.append(channel)
        return channel

    def _drop(self, channel: Channel) -> None:
        self.attempts.pop(id(channel), None)

    def _retire(self, channel: Channel) -> None:
        """Close a connection given up on, in the background (a server process takes up
        to a few seconds to stop; the conversation goes on meanwhile)."""
        self._drop(channel)
        if channel in self.channels:
            self.channels.remove(channel)
            thread = threading.Thread(target=channel.close, daemon=True)
            thread.start()
            self._closing.append(thread)

    def close_all(self) -> None:
        """Close every connection (side by side) and wait until all are closed."""
        for channel in list(self.channels):
            self._retire(channel)
        for thread in self._closing:
            thread.join()
        self._closing = []

    # -- opening ----------------------------------------------------------------

    def _discover(self, channel: Channel) -> None:
        rid = f"{self.prefix}-discover"
        self.attempts[id(channel)] = (channel, _Attempt("server/discover", rid))
        channel.send(request(rid, "server/discover", {"_meta": dict(self.meta)}))

    def _initialize(self, channel: Channel) -> None:
        self._inits += 1
        rid = f"{self.prefix}-init-{self._inits}"
        self.attempts[id(channel)] = (channel, _Attempt("initialize", rid))
        params = {
            "protocolVersion": LATEST_HANDSHAKE,
            "capabilities": dict(self.capabilities),
            "clientInfo": dict(self.client_info),
        }
        channel.send(request(rid, "initialize", params))

    def _initializing(self) -> bool:
        return any(a.method == "initialize" for _, a in self.attempts.values())

    def open(self, era: Era, fallback_after: float) -> _Opening:
        if era == "handshake":
            self._initialize(self._connect())
        else:
            self._discover(self._connect())
        fallback_at = time.monotonic() + fallback_after if era == "auto" else None
        last_error: ProbeError | None = None
        while True:
            if not self.attempts:
                assert last_error is not None
                raise last_error
            until = self.deadline if fallback_at is None else min(self.deadline, fallback_at)
            try:
                event = self.inbox.get(until)
            except TimeoutError:
                if fallback_at is None or time.monotonic() >= self.deadline:
                    raise
                fallback_at = None
                if not self._initializing():
                    self._initialize(self._connect())
                continue
            entry = self.attempts.get(id(event.channel))
            if entry is None:
                continue  # a connection given up on
            channel, attempt = entry
            if isinstance(event, Received):
                message = event.message
                if "method" in message:
                    self._answer_server(channel, message)
                    continue
                if message.get("id") != attempt.request_id:
                    continue
                result = message.get("result")
                if isinstance(result, dict):
                    return self._won(channel, result, attempt)
                refusal = message.get("error")
            elif isinstance(event, Refused):
                if event.request_id != attempt.request_id:
                    continue
                refusal = {"code": -32601}  # the transport's "not here": as method not found
            else:
                self._retire(channel)
                if event.final or era == "modern":
                    raise event.error
                last_error = event.error
                if attempt.method == "server/discover" and not self._initializing():
                    fallback_at = None
                    self._initialize(self._connect())
                continue
            # An error answer to the opening request.
            if attempt.method == "initialize":
                self._retire(channel)
                last_error = ProbeError("the server refused the initialize handshake")
                continue
            if era == "modern":
                raise ProbeError("the server refused server/discover")
            fallback_at = None
            if is_legacy_refusal(refusal):
                self._initialize(channel)
                continue
            # A 2026-era server speaking another version, or an unclassified error: the
            # handshake on a fresh connection, never on this one.
            self._retire(channel)
            last_error = ProbeError("the server refused server/discover")
            if not self._initializing():
                self._initialize(self._connect())

    def _won(self, channel: Channel, result: dict[str, Any], attempt: _Attempt) -> _Opening:
        self.attempts.clear()
        for other in [c for c in self.channels if c is not channel]:
            self._retire(other)
        if attempt.method == "initialize":
            channel.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            return _Opening(channel, result, "handshake")
        return _Opening(channel, result, "modern")

    def _answer_server(self, channel: Channel, message: dict[str, Any]) -> None:
        # ``ping`` is answered; ``roots/list`` gets an empty list when the probe declared
        # roots (the same on every machine); anything else (sampling, elicitation, roots
        # that were not declared) gets "method not found", so the server can go on listing
        # without waiting for a person. Notifications need nothing.
        if "id" not in message:
            return
        method = message.get("method")
        result: dict[str, Any] | None = None
        if method == "ping":
            result = {}
        elif method == "roots/list" and "roots" in self.capabilities:
            result = {"roots": []}
        if result is not None:
            channel.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            return
        channel.send(
            {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {"code": -32601, "message": "Method not found"},
            }
        )

    # -- listing ----------------------------------------------------------------

    def collect(self, opening: _Opening) -> ProbeResult:
        result = opening.result
        if opening.era == "modern":
            identity = identity_from_discover(result)
            protocol: str | None = MODERN_VERSION
            meta: dict[str, Any] | None = dict(self.meta)
        else:
            identity = identity_from_initialize(result)
            version = result.get("protocolVersion")
            protocol = version if isinstance(version, str) else None
            meta = None
        instructions = result.get("instructions")
        if instructions is not None and not isinstance(instructions, str):
            raise ProbeError("the server's instructions are not a string")
        channel = opening.channel
        collector = ListingCollector(
            kinds_offered(result.get("capabilities")), meta=meta, id_prefix=self.prefix
        )
        methods: dict[str, str] = {}

        def send_all(requests: list[dict[str, Any]]) -> None:
            for req in requests:
                methods[req["id"]] = req["method"]
                channel.send(req)

        try:
            send_all(collector.start())
            while not collector.done:
                event = self.inbox.get(self.deadline)
                if event.channel is not channel:
                    continue
                if isinstance(event, Failed):
                    raise event.error
                if isinstance(event, Refused):
                    if collector.owns(event.request_id):
                        method = methods.get(event.request_id, "a listing")
                        raise ProbeError(f"the server refused {method}")
                    continue
                message = event.message
                if "method" in message:
                    self._answer_server(channel, message)
                    continue
                if collector.owns(message.get("id")):
                    send_all(collector.on_response(message))
            snapshot = collector.snapshot(instructions=instructions, identity=identity)
        except CollectError as exc:
            raise ProbeError(exc.reason) from None
        return ProbeResult(
            snapshot=snapshot, era=opening.era, protocol_version=protocol, identity=identity
        )
