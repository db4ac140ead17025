"""``toolpin run -- CMD``: the stdio proxy between an MCP client and a server.

It relays newline-delimited JSON-RPC both ways as raw bytes and parses only what it must
inspect. At connect it holds every client message except the opening handshake (and the
server's answer to it), drains every listing the server offers with its own requests,
and compares the result with the pin:

* no pin yet: pin it (trust on first use) and release everything, in order;
* the pin matches: release;
* drift: block. Nothing queued is ever forwarded (a queued ``tools/call`` never runs);
  every waiting and every later request gets JSON-RPC error -31042, whose message names
  the server's label and the review command and whose ``data`` holds label keys only,
  never server text. The observation is stored for ``toolpin review``.
* could not verify (an error, a timeout, a malformed page, a repeated member name): -31043.

After release every listing the client receives (``tools/list``, ``prompts/list``,
``resources/list``, ``resources/templates/list``, ``server/discover``) is checked against
the pin before it is delivered, page by page, including removals on the last page, so a
server cannot show the check one toolset and the client another, or change mid-session.

The import path stays light: no ``mcp``, ``pydantic`` or ``rich``. Threads, not asyncio:
one per direction, so a message costs one read and one write on the hot path.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, BinaryIO, Final, Protocol

from toolpin.core.canonical import parse_json
from toolpin.core.render import Line, to_text, visible
from toolpin.core.snapshot import Definition, Identity, Kind, Listing, Snapshot
from toolpin.errors import JSONError, ListingError, ToolpinError
from toolpin.protocol import (
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

if TYPE_CHECKING:
    from toolpin.core.drift import Drift

CHUNK: Final = 1 << 20
"""Lines are read in chunks of this size; a longer line that needs no inspection streams."""
MAX_INSPECT: Final = 64 << 20
"""Longest message the proxy will hold and parse (a listing page, a handshake answer)."""
DEFAULT_TIMEOUT: Final = 30.0

EXIT_DRIFT: Final = 1
EXIT_UNVERIFIED: Final = 2
EXIT_SPAWN: Final = 127


class PinSource(Protocol):
    """Where the proxy's pin comes from (the local store, or a team lock)."""

    def pinned(self) -> Snapshot | None:
        """The approved snapshot, or ``None`` to pin on first use."""

    def pin_first(self, snapshot: Snapshot) -> tuple[Snapshot, bool]:
        """Pin ``snapshot`` unless another process did first; returns (pin, created)."""

    def record_drift(self, snapshot: Snapshot, drift: Drift, *, mid_session: bool) -> None:
        """Store the blocked observation for review."""

    def block_message(self, *, mid_session: bool) -> str:
        """The one-line message sent to the client with -31042."""

    def review_hint(self) -> str:
        """The command a person runs to review (``toolpin review <id>``)."""

    def advice(self, *, mid_session: bool) -> list[str]:
        """Closing lines of the stderr block report."""

    def describe_pin(self) -> str:
        """Where the pin came from, for the stderr report (``pinned <time>``)."""


@dataclass
class _Track:
    kind: Kind | None  # None: server/discover
    seen: set[str] | None = None


@dataclass
class ProxyOptions:
    """What :func:`run` needs besides the command."""

    label: str
    server_id: str
    source: PinSource
    timeout: float = DEFAULT_TIMEOUT
    color: bool = False
    quiet: bool = False


def _key(id_: Any) -> str:
    # JSON-RPC ids compare by value and type: 1 and "1" are different requests.
    return json.dumps(id_, separators=(",", ":"))


def _relaxed(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _maybe_watched_client(line: bytes) -> bool:
    return b'"method"' in line and (
        b'/list"' in line
        or b"server/discover" in line
        or b'"initialize"' in line
        or b"notifications/initialized" in line
    )


# states
INIT, HANDSHAKE, VERIFYING, RELEASED, BLOCKED = "init", "handshake", "verifying", "released", "blocked"


class Session:
    """The proxy's state machine. Transport-free: it writes through two callbacks.

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
    ) -> None:
        self.options = options
        self._write_server = write_server
        self._write_client = write_client
        self._log = log
        self._terminate_server = terminate_server
        self._lock = threading.RLock()
        self.state = INIT
        self._pinned: Snapshot | None = options.source.pinned()
        self._pinned_maps: dict[Kind, dict[str, str]] = {}
        self._queue: list[bytes] = []
        self._held_server: list[bytes] = []
        self._held_answer: bytes | None = None
        self._waiting: list[Any] = []  # ids of client requests queued before release
        self._opening_id: Any = None
        self._opening_method: str | None = None
        self._own_discover_id: str | None = None
        self._era: str | None = None
        self._meta: dict[str, Any] | None = None
        self._instructions: str | None = None
        self._identity: Identity | None = None
        self._collector: ListingCollector | None = None
        self._skip_initialized = False
        self._tracked: dict[str, _Track] = {}
        self._sequences: dict[tuple[Kind, str], set[str]] = {}
        self.deadline: float | None = None
        self.exit_code: int | None = None
        self.block_reason: str | None = None
        if self._pinned is not None:
            self._index_pin(self._pinned)

    # ----------------------------------------------------------------------------- client

    def on_client_line(self, line: bytes) -> None:
        """One complete line from the client."""
        with self._lock:
            state = self.state
            if state == RELEASED:
                self._client_released(line)
            elif state == BLOCKED:
                self._client_blocked(line)
            elif state == INIT:
                self._client_init(line)
            else:
                self._enqueue(line)

    def client_streamable(self, first_chunk: bytes) -> bool:
        """Whether a long client line may stream to the server without being held."""
        with self._lock:
            return self.state == RELEASED and not _maybe_watched_client(first_chunk)

    def _client_released(self, line: bytes) -> None:
        if not _maybe_watched_client(line):
            self._write_server(line)
            return
        msg = _relaxed(line)
        if isinstance(msg, dict):
            method = msg.get("method")
            if method == "notifications/initialized" and self._skip_initialized:
                self._skip_initialized = False  # the proxy already sent one
                return
            if "id" in msg and isinstance(method, str):
                if method in LIST_METHODS:
                    kind = LIST_METHODS[method]
                    params = msg.get("params")
                    cursor = params.get("cursor") if isinstance(params, dict) else None
                    if cursor is None:
                        seen: set[str] | None = set()
                    elif isinstance(cursor, str):
                        seen = self._sequences.pop((kind, cursor), None)
                    else:
                        seen = None
                    self._tracked[_key(msg["id"])] = _Track(kind, seen)
                elif method == "server/discover":
                    self._tracked[_key(msg["id"])] = _Track(None)
        self._write_server(line)

    def _client_blocked(self, line: bytes) -> None:
        msg = _relaxed(line)
        if isinstance(msg, dict) and "id" in msg and "method" in msg:
            self._answer_blocked(msg["id"])

    def _enqueue(self, line: bytes) -> None:
        self._queue.append(line)
        msg = _relaxed(line)
        if isinstance(msg, dict) and "id" in msg and "method" in msg:
            self._waiting.append(msg["id"])

    def _client_init(self, line: bytes) -> None:
        msg = _relaxed(line)
        if not isinstance(msg, dict) or "id" not in msg or not isinstance(msg.get("method"), str):
            self._queue.append(line)
            return
        method = msg["method"]
        if method == "initialize":
            self._opening(msg, "initialize", line)
            self._era = "handshake"
        elif method == "server/discover":
            self._opening(msg, "server/discover", line)
            self._era = "modern"
            self._meta = client_meta(msg.get("params"))
        elif (meta := client_meta(msg.get("params"))) is not None:
            # 2026-07-28 without discover: hold the request, ask the server ourselves.
            self._enqueue(line)
            self._era = "modern"
            self._meta = meta
            self._own_discover_id = f"toolpin-discover-{os.getpid()}-{os.urandom(3).hex()}"
            self.state = HANDSHAKE
            self._arm_deadline()
            self._send(request(self._own_discover_id, "server/discover", {"_meta": dict(meta)}))
        else:
            self._enqueue(line)

    def _opening(self, msg: dict[str, Any], method: str, line: bytes) -> None:
        self._opening_id = msg["id"]
        self._opening_method = method
        self.state = HANDSHAKE
        self._write_server(line)

    # ----------------------------------------------------------------------------- server

    def server_streamable(self) -> bool:
        """Whether a long server line may stream to the client without being held."""
        with self._lock:
            return self.state == RELEASED and not self._tracked

    def on_server_line(self, line: bytes) -> None:
        """One complete line from the server."""
        with self._lock:
            state = self.state
            if state == RELEASED:
                if not self._tracked:
                    self._write_client(line)
                else:
                    self._server_released(line)
            elif state == BLOCKED:
                return
            elif state == INIT:
                self._held_server.append(line)
            else:
                self._server_connecting(line)

    def _strict(self, line: bytes) -> Any:
        """Parse a line the proxy must trust; ``None`` for a line that is not strict JSON."""
        try:
            return parse_json(line, max_depth=128)
        except JSONError:
            return None

    def _server_connecting(self, line: bytes) -> None:
        msg = self._strict(line)
        if msg is None:
            loose = _relaxed(line)
            if isinstance(loose, dict) and "id" in loose and self._is_ours(loose.get("id")):
                self._unverified("the server repeated a JSON member name or sent malformed JSON")
                return
            self._held_server.append(line)
            return
        if not isinstance(msg, dict) or "id" not in msg or "method" in msg:
            self._held_server.append(line)  # a notification or a server request: held
            return
        id_ = msg["id"]
        if self.state == HANDSHAKE and self._opening_id is not None and _key(id_) == _key(self._opening_id):
            self._opening_answer(msg, line)
        elif self.state == HANDSHAKE and self._own_discover_id is not None and id_ == self._own_discover_id:
            self._own_discover_answer(msg)
        elif self.state == VERIFYING and self._collector is not None and self._collector.owns(id_):
            try:
                follow = self._collector.on_response(msg)
            except CollectError as exc:
                self._unverified(exc.reason)
                return
            for req in follow:
                self._send(req)
            if self._collector.done:
                self._verdict()
        else:
            self._held_server.append(line)

    def _is_ours(self, id_: Any) -> bool:
        if self._opening_id is not None and _key(id_) == _key(self._opening_id):
            return True
        if id_ == self._own_discover_id:
            return True
        return self._collector is not None and self._collector.owns(id_)

    def _opening_answer(self, msg: dict[str, Any], line: bytes) -> None:
        result = msg.get("result")
        if not isinstance(result, dict):
            # The server refused the handshake (a legacy server answering server/discover):
            # pass the answer on at once so a dual-era client can fall back immediately.
            self._write_client(line)
            self._opening_id = None
            self.state = INIT
            self._era = None
            self._meta = None
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

    def _own_discover_answer(self, msg: dict[str, Any]) -> None:
        result = msg.get("result")
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
        message = f"toolpin could not verify {self._quoted_label()} ({reason}), so nothing was forwarded."
        for id_ in self._waiting:
            self._write_json(error_response(id_, UNVERIFIED_ERROR, message, self._data("unverified")))
        self._queue.clear()
        self._waiting.clear()
        self._own_discover_id = None
        self.state = INIT
        self.deadline = None

    def _start_collecting(self, capabilities: Any) -> None:
        self.state = VERIFYING
        self._arm_deadline()
        self._collector = ListingCollector(kinds_offered(capabilities), meta=self._meta)
        for req in self._collector.start():
            self._send(req)

    def _arm_deadline(self) -> None:
        self.deadline = time.monotonic() + self.options.timeout

    def on_deadline(self) -> None:
        """Called by the watchdog when the deadline has passed."""
        with self._lock:
            if self.deadline is None or time.monotonic() < self.deadline:
                return
            if self.state == VERIFYING or (self.state == HANDSHAKE and self._own_discover_id):
                if self.state == HANDSHAKE:
                    self._fail_opening("the server did not answer server/discover")
                else:
                    self._unverified("the server did not answer in time")

    # ---------------------------------------------------------------------------- verdict

    def _verdict(self) -> None:
        assert self._collector is not None
        try:
            observed = self._collector.snapshot(instructions=self._instructions, identity=self._identity)
        except CollectError as exc:
            self._unverified(exc.reason)
            return
        source = self.options.source
        if self._pinned is None:
            try:
                pinned, created = source.pin_first(observed)
            except ToolpinError as exc:
                self._unverified(f"the pin store could not be written: {exc.message}", stderr_only=True)
                return
            self._pinned = pinned
            self._index_pin(pinned)
            if created:
                self._note(f"pinned {_counts(observed)} for {self.options.label} ({observed.surface_hash()[:12]})")
                self._release()
                return
        if _same(self._pinned, observed):
            self._note(f"{self.options.label}: {_counts(observed)} unchanged ({observed.surface_hash()[:12]})")
            self._release()
            return
        from toolpin.core.drift import compare  # only when something differs

        drift = compare(self._pinned, observed)
        if drift.ok:  # e.g. only the server's version or protocol moved
            self._release()
            return
        self._block(drift, observed, mid_session=False)

    def _release(self) -> None:
        self.state = RELEASED
        self.deadline = None
        if self._held_answer is not None:
            self._write_client(self._held_answer)
            self._held_answer = None
        held, self._held_server = self._held_server, []
        for line in held:
            self._write_client(line)
        queue, self._queue = self._queue, []
        self._waiting.clear()
        for line in queue:
            self._client_released(line)

    # ----------------------------------------------------------------------------- blocks

    def _quoted_label(self) -> str:
        return json.dumps(visible(self.options.label), ensure_ascii=False)

    def _data(self, reason: str, drift: Drift | None = None) -> dict[str, Any]:
        from toolpin.store import change_keys

        data: dict[str, Any] = {
            "reason": reason,
            "server": self.options.server_id,
            "review": self.options.source.review_hint(),
        }
        if drift is not None:
            data["changes"] = change_keys(drift)
        return data

    def _answer_blocked(self, id_: Any) -> None:
        if self.block_reason == "drift":
            message = self.options.source.block_message(mid_session=self._mid_session)
            data = self._data("definitions_changed", self._drift)
            self._write_json(error_response(id_, DRIFT_ERROR, message, data))
        else:
            message = (
                f"toolpin could not verify {self._quoted_label()} ({self._unverified_reason}), "
                "so nothing was forwarded."
            )
            self._write_json(error_response(id_, UNVERIFIED_ERROR, message, self._data("unverified")))

    _drift: Drift | None = None
    _mid_session = False
    _unverified_reason = ""

    def _enter_blocked(self) -> None:
        self.state = BLOCKED
        self.deadline = None
        waiting = list(self._waiting)
        if self._held_answer is not None and self._opening_id is not None:
            waiting.insert(0, self._opening_id)
        self._held_answer = None
        self._queue.clear()
        self._held_server.clear()
        self._waiting.clear()
        for id_ in waiting:
            self._answer_blocked(id_)
        self._terminate_server()

    def _block(self, drift: Drift, observed: Snapshot, *, mid_session: bool, blocked_ids: Sequence[Any] = ()) -> None:
        self.block_reason = "drift"
        self._drift = drift
        self._mid_session = mid_session
        self.exit_code = EXIT_DRIFT
        try:
            self.options.source.record_drift(observed, drift, mid_session=mid_session)
        except ToolpinError as exc:
            self._log(f"toolpin: could not store the observation for review: {exc.message}")
        self._report(drift, mid_session=mid_session)
        for id_ in blocked_ids:
            self._answer_blocked(id_)
        self._enter_blocked()

    def _unverified(self, reason: str, *, stderr_only: bool = False, mid_session: bool = False, blocked_ids: Sequence[Any] = ()) -> None:
        self.block_reason = "unverified"
        self._unverified_reason = "see the message on stderr" if stderr_only else reason
        self.exit_code = EXIT_UNVERIFIED
        where = "stopped" if mid_session else "could not verify"
        self._log(f"toolpin: {where} {visible(self.options.label)}: {reason}; nothing was forwarded.")
        for id_ in blocked_ids:
            self._answer_blocked(id_)
        self._enter_blocked()

    def _report(self, drift: Drift, *, mid_session: bool) -> None:
        from toolpin.core.report import review_lines

        only_tools = all(c.kind is Kind.TOOL for c in drift.changes) and drift.instructions is None
        what = "TOOL DEFINITIONS" if only_tools and drift.changes else "DEFINITIONS"
        when = "DURING THIS SESSION" if mid_session else "SINCE YOU APPROVED THIS SERVER"
        lines = [
            Line(""),
            Line(f"  ⛔ toolpin: {what} CHANGED {when}", "bad"),
            Line(f"  server: {visible(self.options.label)}"),
            Line(f"  id: {self.options.server_id}"),
            Line(f"  {self.options.source.describe_pin()}"),
            Line(""),
            *review_lines(drift),
            Line(""),
        ]
        lines.extend(Line(f"  {x}", "header" if i == 0 else None) for i, x in enumerate(self.options.source.advice(mid_session=mid_session)))
        self._log(to_text(lines, color=self.options.color))

    # ----------------------------------------------------------------------- whole session

    def _index_pin(self, pin: Snapshot) -> None:
        self._pinned_maps = {}
        for listing in pin.listings():
            self._pinned_maps[listing.kind] = {d.key: d.hash for d in listing.items}

    def _server_released(self, line: bytes) -> None:
        loose = _relaxed(line)
        id_ = loose.get("id") if isinstance(loose, dict) else None
        track = self._tracked.pop(_key(id_), None) if isinstance(loose, dict) and "id" in loose and "method" not in loose else None
        if track is None:
            self._write_client(line)
            return
        msg = self._strict(line)
        if msg is None:
            self._unverified("the server repeated a JSON member name in a listing", mid_session=True, blocked_ids=[id_])
            return
        result = msg.get("result")
        if not isinstance(result, dict):
            self._write_client(line)  # an error answer is the server's own business
            return
        try:
            problem = self._check_result(track, result)
        except (CollectError, ListingError) as exc:
            reason = exc.reason if isinstance(exc, CollectError) else exc.message
            self._unverified(reason, mid_session=True, blocked_ids=[id_])
            return
        if problem is None:
            self._write_client(line)
            return
        drift, observed = problem
        self._block(drift, observed, mid_session=True, blocked_ids=[id_])

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
                if seen != set(pinned):
                    differs = True
            elif isinstance(cursor, str) and len(self._sequences) < 256:
                self._sequences[(kind, cursor)] = seen
        if not differs:
            return None
        observed = self._observed_after_page(kind, page, seen if complete else None)
        from toolpin.core.drift import compare

        return compare(self._pinned, observed), observed

    def _observed_after_page(self, kind: Kind, page: dict[str, Definition], final: set[str] | None) -> Snapshot:
        """The pin with this page applied (and removals when the listing is complete)."""
        assert self._pinned is not None
        old = self._pinned.listing(kind)
        items = {d.key: d for d in (old.items if old is not None else ())}
        items.update(page)
        if final is not None:
            items = {k: v for k, v in items.items() if k in final}
        listing = Listing.of(kind, items.values())
        field_name = {
            Kind.TOOL: "tools",
            Kind.PROMPT: "prompts",
            Kind.RESOURCE: "resources",
            Kind.TEMPLATE: "resource_templates",
        }[kind]
        return replace(self._pinned, **{field_name: listing})

    # ------------------------------------------------------------------------------ misc

    def _send(self, message: dict[str, Any]) -> None:
        self._write_server(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def _write_json(self, message: dict[str, Any]) -> None:
        self._write_client(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")

    def _note(self, text: str) -> None:
        if not self.options.quiet:
            self._log(f"toolpin: {visible(text)}")

    def on_server_oversized(self) -> None:
        """A server line longer than :data:`MAX_INSPECT` arrived and could not be streamed."""
        with self._lock:
            if self.state != BLOCKED:
                self._unverified(
                    "a message too large to check arrived while a check was pending",
                    mid_session=self.state == RELEASED,
                )

    def on_client_oversized(self) -> None:
        """A client line too large to hold arrived before release: it is dropped."""
        with self._lock:
            self._log("toolpin: dropped a client message larger than 64 MiB sent before verification")

    def on_server_exit(self, code: int | None) -> int:
        """The server's stdout closed; returns the proxy's exit code."""
        with self._lock:
            if self.state in (HANDSHAKE, VERIFYING) or (self.state == INIT and self._queue):
                self._unverified("the server exited before it could be verified")
            if self.exit_code is not None:
                return self.exit_code
            return 1 if code is None else code


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


# -------------------------------------------------------------------------------- relay


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class _Relay:
    """Process plumbing: spawn, two reader threads, a watchdog, signals, exit."""

    def __init__(self, argv: Sequence[str], options: ProxyOptions) -> None:
        self.argv = list(argv)
        self.options = options
        self.client_out = sys.stdout.fileno()
        self.out_lock = threading.Lock()
        self.server_lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.server_in: int | None = None
        self.session: Session | None = None
        self.exiting = threading.Event()

    # writes (called with the session lock held; these locks are leaves)
    def write_client(self, data: bytes) -> None:
        with self.out_lock:
            try:
                _write_all(self.client_out, data)
            except (BrokenPipeError, OSError):
                self.shutdown(EXIT_UNVERIFIED if self.session is None else (self.session.exit_code or 0))

    def write_server(self, data: bytes) -> None:
        with self.server_lock:
            if self.server_in is None:
                return
            try:
                _write_all(self.server_in, data)
            except (BrokenPipeError, OSError):
                pass  # the server is gone; its exit is handled by the stdout reader

    def log(self, text: str) -> None:
        try:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass

    def terminate_server(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                proc.terminate()
            except OSError:
                pass
        with self.server_lock:
            if self.server_in is not None:
                try:
                    os.close(self.server_in)
                except OSError:
                    pass
                self.server_in = None

    def shutdown(self, code: int) -> None:
        if self.exiting.is_set():
            return
        self.exiting.set()
        self.terminate_server()
        proc = self.proc
        if proc is not None:
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                proc.kill()
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os._exit(code)

    def spawn(self) -> None:
        kwargs: dict[str, Any] = {}
        if sys.platform.startswith("linux"):
            kwargs["preexec_fn"] = _die_with_parent
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=None,
                bufsize=0,
                **kwargs,
            )
        except OSError as exc:
            self.log(f"toolpin: cannot start the server {visible(self.options.label)}: {exc.strerror or exc}")
            raise SystemExit(EXIT_SPAWN) from None
        assert self.proc.stdin is not None
        self.server_in = self.proc.stdin.fileno()

    def run(self) -> int:
        self.spawn()
        assert self.proc is not None and self.proc.stdout is not None
        self.session = Session(
            self.options,
            write_server=self.write_server,
            write_client=self.write_client,
            log=self.log,
            terminate_server=self.terminate_server,
        )
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._forward_signal)
        server_reader = threading.Thread(target=self._pump_server, name="toolpin-server", daemon=True)
        server_reader.start()
        threading.Thread(target=self._watchdog, name="toolpin-watchdog", daemon=True).start()
        self._pump_client()
        # The client closed its side: close the server's stdin and let it finish.
        with self.server_lock:
            if self.server_in is not None:
                try:
                    os.close(self.server_in)
                except OSError:
                    pass
                self.server_in = None
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        server_reader.join(timeout=5)
        code = self.session.exit_code
        if code is None:
            code = self.proc.returncode if self.proc.returncode is not None else 0
            code = code if code >= 0 else 128 - code
        return code

    def _forward_signal(self, signum: int, _frame: Any) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                proc.send_signal(signum)
            except OSError:
                pass

    def _watchdog(self) -> None:
        while not self.exiting.is_set():
            time.sleep(0.2)
            session = self.session
            if session is not None and session.deadline is not None:
                session.on_deadline()

    def _pump_client(self) -> None:
        assert self.session is not None
        reader = sys.stdin.buffer
        session = self.session
        _pump(reader, session.on_client_line, session.client_streamable, self.write_server, session.on_client_oversized)

    def _pump_server(self) -> None:
        assert self.session is not None and self.proc is not None and self.proc.stdout is not None
        reader: BinaryIO = self.proc.stdout  # type: ignore[assignment]
        session = self.session
        _pump(
            reader,
            session.on_server_line,
            lambda _chunk: session.server_streamable(),
            self.write_client,
            session.on_server_oversized,
        )
        code = self.proc.wait()
        exit_code = self.session.on_server_exit(code)
        if self.session.state == BLOCKED and self.session.block_reason == "drift" and not self.session._mid_session:
            return  # keep answering the client with the block error until it hangs up
        self.shutdown(exit_code if exit_code >= 0 else 128 - exit_code)


def _pump(
    reader: Any,
    on_line: Callable[[bytes], None],
    streamable: Callable[[bytes], bool],
    write_through: Callable[[bytes], None],
    on_oversized: Callable[[], None],
) -> None:
    """Read lines; hand complete ones to ``on_line``; stream long ones when allowed."""
    readline = reader.readline
    while True:
        try:
            chunk = readline(CHUNK)
        except (OSError, ValueError):
            return
        if not chunk:
            return
        if chunk.endswith(b"\n"):
            if chunk.strip():
                on_line(chunk)
            continue
        # A long line (or the last bytes before EOF).
        if streamable(chunk):
            write_through(chunk)
            while not chunk.endswith(b"\n"):
                chunk = readline(CHUNK)
                if not chunk:
                    return
                write_through(chunk)
            continue
        parts = [chunk]
        size = len(chunk)
        too_long = False
        while not chunk.endswith(b"\n"):
            chunk = readline(CHUNK)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_INSPECT:
                too_long = True
                parts = []
            elif not too_long:
                parts.append(chunk)
        if too_long:
            on_oversized()
            continue
        line = b"".join(parts)
        if line.strip():
            on_line(line if line.endswith(b"\n") else line + b"\n")


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def run(argv: Sequence[str], options: ProxyOptions) -> int:
    """Run the proxy until the client hangs up; returns the exit code."""
    return _Relay(argv, options).run()
