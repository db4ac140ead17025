"""The proxy's state machine (:class:`Session`): transport-free, it acts through callbacks.

It sees newline-delimited JSON-RPC both ways as raw bytes and parses only what it must
inspect. At connect it holds every client message except the opening handshake (and the
server's answer to it), drains every listing the server offers with its own requests,
and compares the result with the pin:

* no pin yet: pin it (trust on first use) and release everything, in order;
* the pin matches: release;
* drift (or, for a pin found by ``--name``, a changed command): block. Nothing queued is
  ever forwarded (a queued ``tools/call`` never runs); every waiting and every later
  request gets JSON-RPC error -31042, whose message names the server's label and the
  review command and whose ``data`` holds label keys only, never server text. The
  observation is stored for ``toolpin review``.
* could not verify (an error, a timeout, a malformed page, an answer not fit to check,
  a fault of the pin store): -31043, naming its one cause (``data.detail``).

After release every listing the client receives (``tools/list``, ``prompts/list``,
``resources/list``, ``resources/templates/list``, ``server/discover``) is checked against
the pin before it is delivered, page by page, including removals on the last page, so a
server cannot show the check one toolset and the client another, or change mid-session.

Every server line is classified once by :func:`toolpin.proxy.classify.classify` (the
allow-list) and is forwarded or held only when it is exactly one JSON-RPC message; any
other line is dropped, counted, and stops a session that waits for an answer to a check.
Lines arrive whole (up to :data:`MAX_INSPECT`, framed by :mod:`toolpin.proxy.relay`), so
a response to a listing request cannot slip through while it is still arriving; a longer
server line stops the session, a longer client line streams to a released server.

The import path stays light: no ``mcp``, ``pydantic`` or ``rich``.
"""

from __future__ import annotations

import datetime
import enum
import json
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from toolpin.core.render import Line, counted, to_text, visible
from toolpin.core.snapshot import Definition, Identity, Kind, Listing, Snapshot
from toolpin.core.wire import (
    DRIFT_ERROR,
    LIST_METHODS,
    UNVERIFIED_ERROR,
    CollectError,
    ListingCollector,
    client_meta,
    error_response,
    identity_from_discover,
    identity_from_initialize,
    kinds_offered,
    request,
)
from toolpin.errors import (
    AuditChainBroken,
    JSONError,
    ListingError,
    StoreWriteError,
    ToolpinError,
)
from toolpin.proxy.classify import OPAQUE, Message, Shape, Unclassified, classify
from toolpin.proxy.known_page import KnownPages

if TYPE_CHECKING:
    from toolpin.core.argvdiff import ArgvDiff
    from toolpin.core.drift import Drift
    from toolpin.pins.publiclog import Evidence, PublicCheck
    from toolpin.pins.source import PinSource

READ_SIZE: Final = 1 << 16
"""Bytes asked of the operating system per read."""
MAX_INSPECT: Final = 64 << 20
"""Longest message the proxy holds whole (every server line; client lines before release)."""
DEFAULT_TIMEOUT: Final = 30.0

EXIT_DRIFT: Final = 1
EXIT_UNVERIFIED: Final = 2

REASON_DRIFT: Final = "definitions_changed"
REASON_UNVERIFIED: Final = "could_not_verify"


@dataclass
class _Track:
    id: Any  # the request's id as the client wrote it
    kind: Kind | None  # None: server/discover or initialize (instructions)
    seen: set[str] | None = None
    whole: bool = False  # a first page (no cursor): its answer may be remembered


@dataclass
class ProxyOptions:
    """What :func:`run` needs besides the command."""

    label: str
    server_id: str
    source: PinSource
    timeout: float = DEFAULT_TIMEOUT
    color: bool = False
    quiet: bool = False
    command_change: str | None = None
    """``old -> new`` when the server's command differs from the pinned one (a pin found
    by ``--name``): the session blocks for review like any drift."""
    command_diff: ArgvDiff | None = None
    """The word diff of the two (redacted) commands, for the report and the -31042 data."""
    public: PublicCheck | None = None
    """A public log to consult at a first pin and at a block (``--log``); ``None``: none."""


_JS_SAFE: Final = 1 << 53


def _key(id_: Any) -> Hashable:
    """A request id as a client matches it: by type and by JavaScript number value.

    ``1`` and ``"1"`` are different requests, but ``1``, ``1.0`` and ``1e0`` are one (a
    JavaScript client reads them alike), so a server cannot dodge a check by spelling.
    """
    if type(id_) is int:
        number: int = id_
        return number if -_JS_SAFE <= number <= _JS_SAFE else int(float(number))
    if type(id_) is str:
        text: str = id_
        return text
    if type(id_) is float:
        real: float = id_
        return int(real) if real.is_integer() else real
    return ("json", json.dumps(id_, sort_keys=True))


MAX_FORWARDED: Final = 16384
"""Ids of client requests remembered (oldest forgotten first)."""
MAX_DROP_NOTES: Final = 10
"""Dropped server lines named one by one on stderr (the rest are counted)."""
INVALID_REQUEST: Final = -32600
_ABSENT: Final = object()


_SDK_OPENINGS: Final = (b'{"jsonrpc":"2.0","id":', b'{"result":')
"""How the SDKs' responses open (:func:`toolpin.proxy.classify.sdk_envelope`)."""
_WATCHED: Final = re.compile(rb"/list|discover|initializ|\\")
"""Bytes in every client line the proxy must parse whole: the listing methods,
``server/discover``, ``initialize``, ``notifications/initialized``, and any backslash
(JSON escapes can spell a method name)."""
_ID: Final = rb'(-?[0-9]{1,15}|"[^"\\]{0,256}")'
_HEAD: Final = re.compile(rb'\{"jsonrpc":"2\.0","id":' + _ID + rb',"method":"')
_TAIL: Final = re.compile(rb',"jsonrpc":"2\.0","id":' + _ID + rb"\}\s*\Z")


def _request_id(line: bytes) -> tuple[bool, Any]:
    """The id of a client request written the way the SDKs write them, without a parse.

    ``{"jsonrpc":"2.0","id":N,"method":...`` (Python) or ``{"method":...,"jsonrpc":"2.0",
    "id":N}`` (TypeScript): in both shapes the id is certainly the top-level one. Returns
    ``(False, None)`` for any other shape (the caller then parses the line).
    """
    match = _HEAD.match(line)
    if match is None and line.startswith(b'{"method":"'):
        match = _TAIL.search(line, max(0, len(line) - 300))
    if match is None:
        return False, None
    raw = match.group(1)
    if raw[:1] == b'"':
        return True, raw[1:-1].decode("utf-8", "replace")
    return True, int(raw)


def _as_dict(msg: Message) -> dict[str, Any]:
    """A response as the collector reads it."""
    if msg.error is not None:
        return {"jsonrpc": "2.0", "id": msg.id, "error": msg.error}
    return {"jsonrpc": "2.0", "id": msg.id, "result": msg.result}


def _valid_plain_id(value: Any) -> bool:
    kind = type(value)
    return kind is str or kind is int or (kind is float and value - value == 0.0)


def _unfit(msg: Message) -> str:
    """Why a result could not be checked, in toolpin's words (never the server's)."""
    return msg.unfit or "it was not read for checking"


def _batch_refusal(batch: list[Any] | None) -> bytes:
    """The answer to a JSON-RPC batch: an error per request in it (as a batch), or one
    error with a null id when it holds none or is not well-formed."""
    message = (
        "toolpin does not relay JSON-RPC batches (MCP removed them in revision "
        "2025-06-18); send each message on its own line."
    )
    ids = [
        m["id"]
        for m in batch or ()
        if isinstance(m, dict) and "id" in m and isinstance(m.get("method"), str)
    ]
    ids = [i for i in ids if _valid_plain_id(i)]
    if not ids:
        reply: Any = error_response(None, INVALID_REQUEST, message)
    else:
        reply = [error_response(i, INVALID_REQUEST, message) for i in ids]
    return json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


class State(enum.Enum):
    """Where a session is. It only moves forward, except HANDSHAKE back to INIT when a
    server refuses the opening request (a dual-era client then starts over)."""

    INIT = "init"
    """Nothing sent to the server yet but, perhaps, notifications held."""
    HANDSHAKE = "handshake"
    """The opening request (``initialize`` or ``server/discover``) is with the server."""
    VERIFYING = "verifying"
    """The proxy drains the listings with its own requests; the client's are held."""
    RELEASED = "released"
    """The check passed: traffic flows, and every listing is checked on its way."""
    BLOCKED = "blocked"
    """Drift, or could not verify: every request is answered with the error."""


class Session:
    """The proxy's state machine. Transport-free: it acts through callbacks.

    Every method takes the session lock; callbacks are called with it held, so they must
    not call back into the session.
    """

    def __init__(
        self,
        options: ProxyOptions,
        write_server: Callable[[bytes], None],
        write_client: Callable[[bytes], None],
        log: Callable[[str], None],
        terminate_server: Callable[[], None],
        close_server_input: Callable[[], None] = lambda: None,
    ) -> None:
        self.options = options
        self._write_server = write_server
        self._write_client = write_client
        self._log = log
        self._terminate_server = terminate_server
        self._close_server_input = close_server_input
        self._client_eof = False
        self._lock = threading.RLock()
        self.state = State.INIT
        self._pinned: Snapshot | None = options.source.pinned()
        self._pinned_maps: dict[Kind, dict[str, str]] = {}
        self._queue: list[bytes] = []
        self._held_server: list[tuple[Message, bytes]] = []
        self._held_answer: bytes | None = None
        self._waiting: list[Any] = []  # ids of client requests queued before release
        self._opening_id: Any = None
        self._opening_method: str | None = None
        self._opening_pending = False
        self._own_discover_id: str | None = None
        self._era: str | None = None
        self._meta: dict[str, Any] | None = None
        self._instructions: str | None = None
        self._identity: Identity | None = None
        self._collector: ListingCollector | None = None
        self._skip_initialized = False
        self._tracked: dict[Hashable, _Track] = {}
        # ids of client requests sent to the server, oldest first (popitem is O(1))
        self._forwarded: OrderedDict[Hashable, None] = OrderedDict()
        self._dropped_note = False
        self.dropped = 0
        self._verified: dict[Kind | None, tuple[bytes, bytes]] = {}
        self._known = KnownPages()
        self._sequences: dict[tuple[Kind, str], set[str]] = {}
        self.deadline: float | None = None
        self.exit_code: int | None = None
        self.block_reason: str | None = None
        self.mid_session = False
        self._drift: Drift | None = None
        self._report_path: str | None = None
        self._review_unsaved: str | None = None  # why a blocked change could not be stored
        self._unverified_reason = ""
        self._evidence: Evidence | None = None  # the public log's answer (with --log)
        self._review: str | None = None  # the data.review of a require-public refusal
        if self._pinned is not None:
            self._index_pin(self._pinned)

    # ----------------------------------------------------------------------------- client

    def on_client_line(self, line: bytes) -> None:
        """One complete line from the client."""
        with self._lock:
            state = self.state
            if state is State.RELEASED:
                self._client_released(line)
            elif state is State.BLOCKED:
                self._client_blocked(line)
            elif state is State.INIT:
                self._client_init(line)
            else:
                self._enqueue(line)

    def on_client_eof(self) -> None:
        """The client closed its side (half-close).

        Nothing it sent is lost: a released session closes the server's input now; a
        session still verifying keeps the held requests, forwards them after a clean
        verdict (or answers them with the block error) and closes the server's input only
        then.
        """
        with self._lock:
            self._client_eof = True
            if self.state is State.INIT or self.settled():
                # INIT: no verdict is coming (a request queued before the handshake is
                # answered when the server ends).
                self._close_server_input()

    def settled(self) -> bool:
        """Released or blocked: no deadline can fire any more."""
        state = self.state
        return state is State.RELEASED or state is State.BLOCKED

    def on_fault(self, exc: BaseException) -> None:
        """An exception escaped a handler: stop as "could not verify" (never silently)."""
        with self._lock:
            if self.state is State.BLOCKED:
                return
            self._unverified(
                f"toolpin hit an unexpected {type(exc).__name__} while relaying",
                mid_session=self.state is State.RELEASED,
                blocked_ids=self._tracked_ids(),
            )

    def _tracked_ids(self) -> list[Any]:
        return [track.id for track in self._tracked.values()]

    def client_long_line(self, head: bytes) -> Callable[[bytes], None] | None:
        """A client line longer than :data:`MAX_INSPECT`: stream it when released."""
        with self._lock:
            if self.state is State.RELEASED:
                return self._write_server
        self._log("toolpin: dropped a client message larger than 64 MiB sent before release")
        return None

    def _remember(self, key: Hashable) -> None:
        forwarded = self._forwarded
        forwarded[key] = None
        if len(forwarded) > MAX_FORWARDED:
            forwarded.popitem(last=False)

    def _client_message(self, line: bytes) -> Message | None:
        """Classify a client line; a batch or a malformed line is answered here with a
        JSON-RPC error (and never forwarded), and ``None`` returned."""
        try:
            return classify(line)
        except Unclassified as exc:
            if exc.batch is not None or exc.reason.endswith("(JSON array)"):
                self._write_client(_batch_refusal(exc.batch))
            else:
                self._write_json(
                    error_response(
                        None,
                        INVALID_REQUEST,
                        f"toolpin did not forward a line that is not one JSON-RPC message "
                        f"({exc.reason}).",
                    )
                )
            return None

    def _client_released(self, line: bytes) -> None:
        if _WATCHED.search(line) is None:
            found, id_ = _request_id(line)
            if found:  # the hot path: a request the proxy only needs the id of
                self._remember(_key(id_))
                self._write_server(line)
                return
        msg = self._client_message(line)
        if msg is None:
            return
        method = msg.method
        if method == "notifications/initialized" and self._skip_initialized:
            self._skip_initialized = False  # the proxy already sent one
            return
        if msg.shape is Shape.REQUEST:
            key = _key(msg.id)
            self._remember(key)
            if method in LIST_METHODS:
                kind = LIST_METHODS[method]
                params = msg.params
                cursor = params.get("cursor") if type(params) is dict else None
                seen: set[str] | None
                if cursor is None and params is not OPAQUE:
                    seen = set()
                elif isinstance(cursor, str):
                    seen = self._sequences.pop((kind, cursor), None)
                else:
                    seen = None
                self._tracked[key] = _Track(msg.id, kind, seen, whole=seen == set())
            elif method in ("server/discover", "initialize"):
                # Both answers carry the instructions (a client that initializes
                # again mid-session reads them again).
                self._tracked[key] = _Track(msg.id, None)
        self._write_server(line)

    def _client_blocked(self, line: bytes) -> None:
        msg = self._client_message(line)
        if msg is not None and msg.shape is Shape.REQUEST:
            self._answer_blocked(msg.id)

    def _enqueue(self, line: bytes, msg: Message | None = None) -> None:
        if msg is None:
            msg = self._client_message(line)
            if msg is None:
                return
        self._queue.append(line)
        if msg.shape is Shape.REQUEST:
            self._waiting.append(msg.id)

    def _client_init(self, line: bytes) -> None:
        msg = self._client_message(line)
        if msg is None:
            return
        if msg.shape is not Shape.REQUEST:
            self._queue.append(line)
            return
        method = msg.method
        params = msg.params
        if method == "initialize":
            self._opening(msg, "initialize", line)
            self._era = "handshake"
        elif method == "server/discover":
            self._opening(msg, "server/discover", line)
            self._era = "modern"
            self._meta = client_meta(params)
        elif (meta := client_meta(params)) is not None:
            # 2026-07-28 without discover: hold the request, ask the server ourselves.
            self._enqueue(line, msg)
            self._era = "modern"
            self._meta = meta
            self._own_discover_id = f"toolpin-discover-{os.getpid()}-{os.urandom(3).hex()}"
            self.state = State.HANDSHAKE
            self._arm_deadline()
            self._send(request(self._own_discover_id, "server/discover", {"_meta": dict(meta)}))
        else:
            self._enqueue(line, msg)

    def _opening(self, msg: Message, method: str, line: bytes) -> None:
        self._opening_id = msg.id
        self._opening_method = method
        self._opening_pending = True
        self.state = State.HANDSHAKE
        self._arm_deadline()
        self._write_server(line)

    # ----------------------------------------------------------------------------- server

    def on_server_line(self, line: bytes) -> None:
        """One complete line from the server: classified once, then handled by state."""
        with self._lock:
            state = self.state
            if state is State.BLOCKED:
                return
            tracked = self._tracked
            if (
                tracked
                and state is State.RELEASED
                and (self._verified_again(line) or self._known_again(line))
            ):
                return
            try:
                msg = classify(line, strict=bool(tracked) or state is not State.RELEASED)
            except Unclassified as exc:
                self._drop(exc)
                return
            if state is State.RELEASED:
                self._server_released(msg, line)
            elif state is State.INIT:
                self._held_server.append((msg, line))
            else:
                self._server_connecting(msg, line)

    def _drop(self, exc: Unclassified) -> None:
        """A server line that is not exactly one JSON-RPC message: never forwarded.

        Counted and named on stderr (never its text). A batch's requests are answered
        with a JSON-RPC error. A line that could have been an answer (it starts like JSON
        and is not plainly something else) stops a session that waits for the server's
        answer to a check: the connect check, or a listing request of the client, which
        therefore gets -31043 instead of waiting forever.
        """
        self.dropped += 1
        count = self.dropped
        if count <= MAX_DROP_NOTES:
            self._log(
                f"toolpin: dropped a line from {visible(self.options.label)}: {exc.reason}; "
                f"it was not forwarded ({count} dropped so far)"
            )
            if count == MAX_DROP_NOTES:
                self._log("toolpin: further dropped lines are only counted")
        if exc.batch is not None and any(
            isinstance(m, dict) and "id" in m and "method" in m for m in exc.batch
        ):
            self._write_server(_batch_refusal(exc.batch))
        if not exc.suspect:
            return
        state = self.state
        if state is State.HANDSHAKE or state is State.VERIFYING:
            self._unverified(f"the server sent {exc.reason} while it was being checked")
        elif state is State.RELEASED and self._tracked:
            self._unverified(
                f"the server sent {exc.reason} while a listing request was waiting",
                mid_session=True,
                blocked_ids=self._tracked_ids(),
            )

    def server_long_line(self, head: bytes) -> Callable[[bytes], None] | None:
        """A server line longer than :data:`MAX_INSPECT`: never forwarded unchecked."""
        with self._lock:
            if self.state is not State.BLOCKED:
                self._unverified(
                    "a message too large to check (over 64 MiB) arrived",
                    mid_session=self.state is State.RELEASED,
                )
        return None

    def _server_connecting(self, msg: Message, line: bytes) -> None:
        if msg.shape is not Shape.RESPONSE:
            self._held_server.append((msg, line))  # a notification or a server request
            return
        id_ = msg.id
        ours = self._is_ours(id_)
        if ours and msg.result is not None and not msg.strict:
            self._unverified(f"the server's answer could not be checked: {_unfit(msg)}")
            return
        if (
            self.state is State.HANDSHAKE
            and self._opening_pending
            and _key(id_) == _key(self._opening_id)
        ):
            self._opening_answer(msg, line)
        elif (
            self.state is State.HANDSHAKE
            and self._own_discover_id is not None
            and id_ == self._own_discover_id
        ):
            self._own_discover_answer(msg)
        elif (
            self.state is State.VERIFYING
            and self._collector is not None
            and self._collector.owns(id_)
        ):
            try:
                follow = self._collector.on_response(_as_dict(msg))
            except CollectError as exc:
                self._unverified(exc.reason)
                return
            for req in follow:
                self._send(req)
            if self._collector.done:
                self._verdict()
        else:
            self._held_server.append((msg, line))

    def _is_ours(self, id_: Any) -> bool:
        if self._opening_pending and _key(id_) == _key(self._opening_id):
            return True
        if self._own_discover_id is not None and id_ == self._own_discover_id:
            return True
        return self._collector is not None and self._collector.owns(id_)

    def _opening_answer(self, msg: Message, line: bytes) -> None:
        self._opening_pending = False
        result = msg.result
        if not isinstance(result, dict):
            # The server refused the handshake (a legacy server answering server/discover):
            # pass the answer on at once so a dual-era client can fall back immediately.
            self._write_client(line)
            self._back_to_init()
            return
        self._held_answer = line
        instructions = result.get("instructions")
        if instructions is not None and not isinstance(instructions, str):
            self._unverified("the server's instructions are not a string")
            return
        self._instructions = instructions
        if self._opening_method == "initialize":
            self._identity = identity_from_initialize(result)
            self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            self._skip_initialized = True
        else:
            self._identity = identity_from_discover(result)
        self._start_collecting(result.get("capabilities"))

    def _back_to_init(self) -> None:
        self._opening_id = None
        self._opening_pending = False
        self._own_discover_id = None
        self.state = State.INIT
        self._era = None
        self._meta = None
        self.deadline = None

    def _own_discover_answer(self, msg: Message) -> None:
        result = msg.result
        if not isinstance(result, dict):
            self._fail_opening("the server did not answer server/discover")
            return
        instructions = result.get("instructions")
        if instructions is not None and not isinstance(instructions, str):
            self._unverified("the server's instructions are not a string")
            return
        self._instructions = instructions
        self._identity = identity_from_discover(result)
        self._start_collecting(result.get("capabilities"))

    def _fail_opening(self, reason: str) -> None:
        # Answer what waits, forget the queue, and let the client start over.
        message = (
            f"toolpin could not verify {self._quoted_label()} ({reason}), so nothing was forwarded."
        )
        for id_ in self._waiting:
            self._write_json(
                error_response(id_, UNVERIFIED_ERROR, message, self._data(REASON_UNVERIFIED))
            )
        self._queue.clear()
        self._waiting.clear()
        self._back_to_init()

    def _start_collecting(self, capabilities: Any) -> None:
        self.state = State.VERIFYING
        self._arm_deadline()
        self._collector = ListingCollector(
            kinds_offered(capabilities),
            meta=self._meta,
            id_prefix=f"toolpin-{os.getpid()}-{os.urandom(3).hex()}",
        )
        for req in self._collector.start():
            self._send(req)

    def _arm_deadline(self) -> None:
        self.deadline = time.monotonic() + self.options.timeout

    def on_deadline(self) -> None:
        """Called by the watchdog; acts when the deadline has passed."""
        with self._lock:
            if self.deadline is None or time.monotonic() < self.deadline:
                return
            self.deadline = None
            if self.state is State.VERIFYING:
                self._unverified("the server did not answer the check in time")
            elif self.state is State.HANDSHAKE and self._own_discover_id is not None:
                self._fail_opening("the server did not answer server/discover")
            elif self.state is State.HANDSHAKE and self._opening_method == "server/discover":
                # A legacy server may ignore server/discover: answer it so that a dual-era
                # client falls back to initialize.
                message = (
                    f"toolpin could not verify {self._quoted_label()} (the server did not "
                    "answer server/discover in time), so nothing was forwarded."
                )
                self._write_json(
                    error_response(
                        self._opening_id,
                        UNVERIFIED_ERROR,
                        message,
                        self._data(REASON_UNVERIFIED),
                    )
                )
                self._back_to_init()
            elif self.state is State.HANDSHAKE:
                self._unverified("the server did not answer initialize in time")

    # ---------------------------------------------------------------------------- verdict

    def _verdict(self) -> None:
        assert self._collector is not None
        try:
            observed = self._collector.snapshot(
                instructions=self._instructions, identity=self._identity
            )
        except CollectError as exc:
            self._unverified(exc.reason)
            return
        source = self.options.source
        if self._pinned is None:
            evidence = self._look_up(observed)
            refusal = evidence.refusal() if evidence is not None else None
            if evidence is not None and refusal is not None:
                self._review = evidence.lookup_command()  # nothing is pending to review
                self._unverified(refusal)
                return
            try:
                pinned, created = source.pin_first(observed)
            except Exception as exc:  # any store fault fails closed, cleanly
                self._store_failed(exc, "pinning it", mid_session=False)
                return
            self._pinned = pinned
            self._index_pin(pinned)
            if created:
                self._note(
                    f"pinned {_counts(observed)} for {self.options.label} "
                    f"({observed.surface_hash()[:12]})"
                )
                if evidence is not None:
                    self._note(f"{self.options.label}: {evidence.line()}")
                self._release()
                return
        if self.options.command_change is not None:
            from toolpin.core.drift import compare

            # A changed command under a known name: reviewed like any drift, whatever
            # the definitions say (the new command may run other code later).
            self._block(compare(self._pinned, observed), observed, mid_session=False)
            return
        if _same(self._pinned, observed):
            self._note(
                f"{self.options.label}: {_counts(observed)} "
                f"{self.options.source.match_text} "
                f"({observed.surface_hash()[:12]})"
            )
            self._release()
            return
        from toolpin.core.drift import compare  # only when something differs

        drift = compare(self._pinned, observed)
        if drift.ok:  # e.g. only the server's version or protocol moved
            self._release()
            return
        if self._accepts_subset() and _only_removals(drift):
            self._note(
                f"{self.options.label}: {_counts(observed)} match the lock "
                f"({counted(len(drift.changes), 'approved definition')} not offered to this client)"
            )
            self._release()
            return
        if self._accepts_public(drift, observed):
            return
        self._block(drift, observed, mid_session=False)

    def _accepts_public(self, drift: Drift, observed: Snapshot) -> bool:
        """``accept-public-after DAYS``: a change at connect that the public log recorded
        at least DAYS ago, whose labels are all on the allow-list (nothing aimed at the
        model), becomes the pin with an audit record and a stderr line; True when it did
        (or when the store failed, which stops the session)."""
        public = self.options.public
        if public is None or public.log.accept_after is None:
            return False
        if self.options.command_change is not None:
            return False
        from toolpin.core.drift import change_keys

        evidence = self._look_up(observed)
        kinds = [kind for change in change_keys(drift) for kind in change["kinds"]]
        now = datetime.datetime.now(datetime.UTC)
        if evidence is None or not evidence.acceptable(kinds, now):
            return False
        found = evidence.to_json()
        keys: tuple[str, ...] = ("origin", "checkpoint_size", "entry_index")
        log: dict[str, Any] = {k: found[k] for k in keys if k in found}
        try:
            accepted = self.options.source.accept_recorded(observed, drift, log)
        except Exception as exc:  # any store fault fails closed, cleanly
            self._store_failed(exc, "accepting the change", mid_session=False)
            return True
        if not accepted:
            return False
        self._pinned = observed
        self._index_pin(observed)
        self._log(
            f"toolpin: {visible(self.options.label)}: accepted a change "
            f"({counted(len(drift.changes), 'definition')}, {', '.join(sorted(set(kinds)))}) "
            f"by accept-public-after {public.log.accept_after}: "
            f"{evidence.about('the new definitions')} "
            f"({observed.surface_hash()[:12]}; the audit log records it)"
        )
        self._release()
        return True

    def _accepts_subset(self) -> bool:
        return self.options.source.accepts_subset

    def _release(self) -> None:
        self.state = State.RELEASED
        self.deadline = None
        if self._held_answer is not None:
            self._write_client(self._held_answer)
            self._held_answer = None
        held, self._held_server = self._held_server, []
        for msg, line in held:
            if msg.shape is Shape.RESPONSE:
                # Nothing of the client's reached the server but the opening request, so
                # a held answer is to a request the client has not sent: never forwarded.
                self._drop_unasked()
                continue
            self._write_client(line)
        queue, self._queue = self._queue, []
        self._waiting.clear()
        for line in queue:
            self._client_released(line)
        if self._client_eof:
            self._close_server_input()

    # ----------------------------------------------------------------------------- blocks

    def _quoted_label(self) -> str:
        return json.dumps(visible(self.options.label), ensure_ascii=False)

    def _data(self, reason: str, drift: Drift | None = None) -> dict[str, Any]:
        from toolpin.core.drift import change_keys

        return {
            "reason": reason,
            "server": self.options.server_id,
            "review": self._review or self.options.source.review_hint(),
            "changes": change_keys(drift) if drift is not None else [],
            **(
                {"command": self.options.command_diff.to_json()}
                if self.options.command_diff is not None and reason == REASON_DRIFT
                else {}
            ),
            **({"log": self._evidence.to_json()} if self._evidence is not None else {}),
        }

    def _look_up(self, observed: Snapshot) -> Evidence | None:
        """The public log's answer for the observed surface (``None`` without a log);
        kept for the report and the error ``data``."""
        if self.options.public is None:
            return None
        if self._evidence is None or self._evidence.digest != observed.surface_hash():
            self._evidence = self.options.public.check(observed.surface_hash())
        return self._evidence

    def _answer_blocked(self, id_: Any) -> None:
        if self.block_reason == "drift":
            message = self.options.source.block_message(mid_session=self.mid_session)
            if self._report_path is not None:
                message += f" (the diff is also in {self._report_path})"
            data = self._data(REASON_DRIFT, self._drift)
            data["review_saved"] = self._review_unsaved is None
            if self._review_unsaved is not None:
                message += "\n" + self._review_unsaved
            self._write_json(error_response(id_, DRIFT_ERROR, message, data))
        else:
            if self.mid_session:
                message = (
                    f"toolpin stopped {self._quoted_label()} ({self._unverified_reason}); "
                    "the response was not forwarded."
                )
            else:
                message = (
                    f"toolpin could not verify {self._quoted_label()} "
                    f"({self._unverified_reason}), so nothing was forwarded."
                )
            data = self._data(REASON_UNVERIFIED)
            data["detail"] = self._unverified_reason
            self._write_json(error_response(id_, UNVERIFIED_ERROR, message, data))

    def _enter_blocked(self, blocked_ids: Sequence[Any]) -> None:
        self.state = State.BLOCKED
        self.deadline = None
        waiting = list(blocked_ids)
        if self._opening_pending or self._held_answer is not None:
            waiting.insert(0, self._opening_id)
        waiting.extend(self._waiting)
        self._held_answer = None
        self._opening_pending = False
        self._queue.clear()
        self._held_server.clear()
        self._waiting.clear()
        self._tracked.clear()
        for id_ in waiting:
            self._answer_blocked(id_)
        self._terminate_server()

    def _block(
        self,
        drift: Drift,
        observed: Snapshot,
        *,
        mid_session: bool,
        blocked_ids: Sequence[Any] = (),
    ) -> None:
        self.block_reason = "drift"
        self._drift = drift
        self.mid_session = mid_session
        self.exit_code = EXIT_DRIFT
        self._look_up(observed)
        try:
            self.options.source.record_drift(observed, drift, mid_session=mid_session)
        except StoreWriteError as exc:  # read fine, cannot write: still a change, unsaved
            self._review_unsaved = _unsaved_note(exc)
        except Exception as exc:  # any other store fault fails closed, cleanly
            self._report(drift, mid_session=mid_session)
            self._store_failed(
                exc, "recording the change", mid_session=mid_session, blocked_ids=blocked_ids
            )
            return
        self._report(drift, mid_session=mid_session)
        self._enter_blocked(blocked_ids)

    def _store_failed(
        self,
        exc: Exception,
        doing: str,
        *,
        mid_session: bool,
        blocked_ids: Sequence[Any] = (),
    ) -> None:
        """A fault of the pin store (any exception): -31043 naming the store, one line
        on stderr saying what is wrong with it, the server stopped, exit 2."""
        if isinstance(exc, ToolpinError):
            why = exc.message
            advice = f" {exc.advice}" if exc.advice else ""
        elif isinstance(exc, OSError):
            why = f"{exc.strerror or type(exc).__name__}" + (
                f" ({exc.filename})" if exc.filename else ""
            )
            advice = (
                " Check the store directory (permissions, disk, mount); the pins were not changed."
            )
        else:
            why = f"an unexpected {type(exc).__name__}"
            advice = " The pins were not changed."
        self.block_reason = "unverified"
        self._drift = None
        self._unverified_reason = (
            "its audit log is broken; repair it with: toolpin verify --repair"
            if isinstance(exc, AuditChainBroken)
            else "its pin store failed; see the server log"
        )
        self.mid_session = mid_session
        self.exit_code = EXIT_UNVERIFIED
        self._log(
            f"toolpin: stopped {visible(self.options.label)}: the pin store failed while "
            f"{doing}: {visible(why)}.{advice} Nothing was forwarded."
        )
        self._enter_blocked(blocked_ids)

    def _unverified(
        self,
        reason: str,
        *,
        stderr_only: bool = False,
        mid_session: bool = False,
        blocked_ids: Sequence[Any] = (),
    ) -> None:
        self.block_reason = "unverified"
        self._unverified_reason = "see the message on stderr" if stderr_only else reason
        self.mid_session = mid_session
        self.exit_code = EXIT_UNVERIFIED
        where = "stopped" if mid_session else "could not verify"
        self._log(
            f"toolpin: {where} {visible(self.options.label)}: {visible(reason)}; "
            "nothing was forwarded."
        )
        self._enter_blocked(blocked_ids)

    def _command_lines(self, drift: Drift) -> list[Line]:
        """The changed command: its word diff (redacted) or, without one, old -> new."""
        if self.options.command_change is None:
            return []
        if self.options.command_diff is None:
            return [Line(f"  Command changed: {visible(self.options.command_change)}", "bad")]
        from toolpin.core.argvdiff import diff_lines

        text = diff_lines(self.options.command_diff)
        lines = [Line(f"  {text[0]}", "bad"), *(Line(f"  {x}") for x in text[1:])]
        return lines if drift.ok else [*lines, Line("")]

    def _evidence_lines(self) -> list[Line]:
        """What the public log says about the observed definitions (toolpin's words)."""
        if self._evidence is None:
            return []
        style = None if self._evidence.recorded else "medium"
        return [Line(f"  log: {self._evidence.about('these definitions')}", style)]

    def _report(self, drift: Drift, *, mid_session: bool) -> None:
        from toolpin.report.environment import environment_hints
        from toolpin.report.text import review_lines

        # a team lock's fix is a pull request; a pin of this machine's store is approved here
        local_pin = None if self.options.source.accepts_subset else self.options.server_id

        only_tools = all(c.kind is Kind.TOOL for c in drift.changes) and drift.instructions is None
        what = "TOOL DEFINITIONS" if only_tools and drift.changes else "DEFINITIONS"
        when = "DURING THIS SESSION" if mid_session else "SINCE YOU APPROVED THIS SERVER"
        if self.options.command_change is not None and not mid_session:
            what = "COMMAND" if drift.ok else f"COMMAND AND {what}"
        lines = [
            Line(""),
            Line(f"  ⛔ toolpin: {what} CHANGED {when}", "bad"),
            Line(f"  server: {visible(self.options.label)}"),
            Line(f"  id: {self.options.server_id}"),
            Line(f"  {self.options.source.describe_pin()}"),
            *self._evidence_lines(),
            Line(""),
            *(self._command_lines(drift) if not mid_session else []),
            *review_lines(drift),
            *(
                Line(f"  {hint}" if hint.startswith("fix:") else f"  hint: {hint}", "medium")
                for hint in environment_hints(drift, os.environ, local_pin=local_pin)
            ),
            Line(""),
        ]
        advice = self.options.source.advice(mid_session=mid_session)
        lines.extend(Line(f"  {x}", "header" if i == 0 else None) for i, x in enumerate(advice))
        if self._review_unsaved is not None:
            lines.append(Line(f"  {self._review_unsaved}", "bad"))
        self._log(to_text(lines, color=self.options.color))
        try:  # for clients that hide stderr; a failure here never changes the verdict
            self._report_path = self.options.source.save_report(to_text(lines, color=False))
        except Exception:
            self._report_path = None

    # ----------------------------------------------------------------------- whole session

    def _index_pin(self, pin: Snapshot) -> None:
        self._pinned_maps = {}
        for listing in pin.listings():
            self._pinned_maps[listing.kind] = {d.key: d.hash for d in listing.items}

    def _server_released(self, msg: Message, line: bytes) -> None:
        if msg.shape is not Shape.RESPONSE:
            self._write_client(line)  # a server request or notification
            return
        key = _key(msg.id)
        if self._forwarded.pop(key, _ABSENT) is _ABSENT:
            # An answer to a request the client has not sent (yet): a client that sends
            # it a moment later would take it unchecked.
            self._drop_unasked()
            return
        track = self._tracked.pop(key, None) if self._tracked else None
        if track is None or msg.result is None:
            self._write_client(line)  # an error answer is the server's own business
            return
        if not msg.strict:
            self._unverified(
                f"a listing the proxy could not check: {_unfit(msg)}",
                mid_session=True,
                blocked_ids=[track.id],
            )
            return
        try:
            problem = self._check_result(track, msg.result)
        except (CollectError, ListingError, JSONError) as exc:
            reason = exc.reason if isinstance(exc, CollectError) else exc.message
            self._unverified(reason, mid_session=True, blocked_ids=[track.id])
            return
        if problem is None:
            self._write_client(line)
            self._remember_verified(track, msg, line)
            return
        drift, observed = problem
        self._block(drift, observed, mid_session=True, blocked_ids=[track.id])

    def _remember_verified(self, track: _Track, msg: Message, line: bytes) -> None:
        """Keep a verified one-page answer so that the same bytes (less the id) need no
        second check (a client that lists again and again costs one comparison)."""
        if not track.whole or msg.id_span is None or "nextCursor" in msg.result:
            return
        self._remember_page(track.kind, msg.id_span, line)

    def _remember_page(self, kind: Kind | None, id_span: tuple[int, int], line: bytes) -> None:
        start, end = id_span
        text = line.decode("utf-8")
        head = text[:start].encode("utf-8")
        tail = line[len(head) + len(text[start:end].encode("utf-8")) :]
        self._verified[kind] = (head, tail)

    def _verified_again(self, line: bytes) -> bool:
        """Whether ``line`` is a verified page again, answering a tracked request; then
        it is forwarded at once."""
        for key, track in self._tracked.items():
            if not track.whole:
                continue
            known = self._verified.get(track.kind)
            if known is None:
                continue
            head, tail = known
            if not (line.startswith(head) and line.endswith(tail)):
                continue
            if len(line) < len(head) + len(tail):
                continue
            middle = line[len(head) : len(line) - len(tail)]
            # A plain scalar in place of the id keeps the verified line's structure.
            if len(middle) > 300 or not middle.isascii() or b"\r" in middle:
                continue
            try:
                id_ = json.loads(middle)
            except ValueError:
                continue
            if not _valid_plain_id(id_) or _key(id_) != key:
                continue
            del self._tracked[key]
            self._forwarded.pop(key, None)
            self._write_client(line)
            return True
        return False

    def _known_again(self, line: bytes) -> bool:
        """Whether ``line`` answers a tracked first-page request with a complete page of
        exactly the pinned definitions, each known by its text
        (:class:`~toolpin.proxy.known_page.KnownPages`); then it is forwarded at once.
        Anything else is left to the general path."""
        kinds = {t.kind for t in self._tracked.values() if t.whole}
        if len(kinds) != 1:
            return False
        kind = kinds.pop()
        if kind is None or not line.startswith(_SDK_OPENINGS):
            return False  # no SDK-shaped answer: the general path, without a decode here
        body = line[:-1] if line.endswith(b"\n") else line
        if body.endswith(b"\r"):
            body = body[:-1]
        if b"\r" in body or b"\n" in body:
            return False
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return False
        read = self._known.read(text, kind)
        if read is None:
            return False
        id_, span, items = read
        key = _key(id_)
        track = self._tracked.get(key)
        if track is None or track.kind is not kind or not track.whole:
            return False
        if key not in self._forwarded:
            return False
        pinned = self._pinned_maps.get(kind, {})
        if any(pinned.get(k) != digest for k, digest in items.items()):
            return False
        if len(items) != len(pinned) and not self._accepts_subset():
            return False
        del self._tracked[key]
        del self._forwarded[key]
        self._write_client(line)
        self._remember_page(kind, span, line)
        return True

    def _drop_unasked(self) -> None:
        if not self._dropped_note:
            self._dropped_note = True
            self._log(
                "toolpin: dropped an answer to a request the client had not sent "
                f"({visible(self.options.label)}); such answers are never forwarded"
            )

    def _check_result(self, track: _Track, result: dict[str, Any]) -> tuple[Drift, Snapshot] | None:
        assert self._pinned is not None
        if track.kind is None:
            instructions = result.get("instructions")
            if instructions is not None and not isinstance(instructions, str):
                raise CollectError("the server's instructions are not a string")
            if instructions == self._pinned.instructions:
                return None
            observed = replace(self._pinned, instructions=instructions, instructions_known=True)
            from toolpin.core.drift import compare

            return compare(self._pinned, observed), observed
        kind = track.kind
        items = result.get(kind.list_member)
        if not isinstance(items, list):
            raise CollectError(f"a {kind.method} response without a {kind.list_member} array")
        pinned = self._pinned_maps.get(kind, {})
        page: dict[str, Definition] = {}
        differs = False
        for raw in items:
            if not isinstance(raw, dict):
                raise CollectError(f"a {kind.method} page holds a non-object")
            definition = Definition.of(kind, raw)
            if definition.key in page:
                raise CollectError(f"a {kind.method} page repeats a {kind.key_member}")
            page[definition.key] = definition
            if pinned.get(definition.key) != definition.hash:
                differs = True
        cursor = result.get("nextCursor")
        seen = track.seen
        complete = cursor is None or cursor == ""
        if seen is not None:
            seen = seen | set(page)
            if complete:
                if seen != set(pinned) and not (self._accepts_subset() and seen <= set(pinned)):
                    differs = True
            elif isinstance(cursor, str) and len(self._sequences) < 256:
                self._sequences[(kind, cursor)] = seen
        if not differs:
            return None
        observed = self._observed_after_page(kind, page, seen if complete else None)
        from toolpin.core.drift import compare

        return compare(self._pinned, observed), observed

    def _observed_after_page(
        self, kind: Kind, page: dict[str, Definition], final: set[str] | None
    ) -> Snapshot:
        """The pin with this page applied (and removals when the listing is complete)."""
        assert self._pinned is not None
        old = self._pinned.listing(kind)
        items = {d.key: d for d in (old.items if old is not None else ())}
        items.update(page)
        if final is not None:
            items = {k: v for k, v in items.items() if k in final}
        listing = Listing.of(kind, items.values())
        fields: dict[str, Any] = {kind.field: listing}
        return replace(self._pinned, **fields)

    # ------------------------------------------------------------------------------ misc

    def _send(self, message: dict[str, Any]) -> None:
        self._write_server(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def _write_json(self, message: dict[str, Any]) -> None:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        self._write_client(text.encode() + b"\n")

    def _note(self, text: str) -> None:
        if not self.options.quiet:
            self._log(f"toolpin: {visible(text)}")

    def on_server_exit(self, code: int | None) -> int:
        """The server's stdout closed; returns the proxy's exit code."""
        with self._lock:
            state = self.state
            if (
                state is State.HANDSHAKE
                or state is State.VERIFYING
                or (state is State.INIT and self._waiting)
            ):
                self._unverified("the server exited before it could be verified")
            if self.exit_code is not None:
                return self.exit_code
            if code is None:
                return 1
            return code if code >= 0 else 128 - code

    def keeps_answering(self) -> bool:
        """After the server is gone: whether to keep answering the client with the error.

        A session blocked at connect answers every request until the client hangs up; a
        session stopped mid-session ends, so that requests already forwarded fail at once.
        """
        with self._lock:
            return self.state is State.BLOCKED and not self.mid_session


def _unsaved_note(exc: StoreWriteError) -> str:
    """The second line of a block whose change the store could not record (one line, the
    store's own words: a path and the operating system's reason, never server text)."""
    return (
        f"The change could not be saved for review: {visible(exc.message.rstrip('.'))}. "
        "`toolpin review` will not show it: fix the store (or set TOOLPIN_HOME to a "
        "writable one) and restart the server to record it."
    )


def _only_removals(drift: Drift) -> bool:
    """Only approved definitions missing: nothing added, changed or re-worded."""
    return (
        bool(drift.changes)
        and all(c.status == "removed" for c in drift.changes)
        and drift.instructions is None
        and not drift.identity.name_changed
    )


def _same(pinned: Snapshot, observed: Snapshot) -> bool:
    """No drift: the same surface and no new server name (the decision, by hashes)."""
    if pinned.surface_hash() != observed.surface_hash():
        return False
    a, b = pinned.identity, observed.identity
    return a is None or b is None or a.name == b.name


def _counts(snapshot: Snapshot) -> str:
    parts = []
    for listing in snapshot.listings():
        if listing.items or listing.kind is Kind.TOOL:
            noun = listing.kind.plural if len(listing) != 1 else listing.kind.plural[:-1]
            parts.append(f"{len(listing)} {noun}")
    if snapshot.instructions is not None:
        parts.append("instructions")
    return ", ".join(parts)
