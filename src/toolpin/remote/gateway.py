"""``toolpin gateway --listen 127.0.0.1:PORT --url URL``: the remote proxy for MCP clients
that speak only HTTP.

The client talks Streamable HTTP to toolpin on this machine; toolpin talks to the remote
server as ``toolpin run --url`` does. The check is the same
:class:`~toolpin.proxy.session.Session` over the same
:class:`~toolpin.remote.channel.RemoteChannel`; only the client side differs (a
:class:`Bridge` in place of the stdio relay):

* **handshake era** (``initialize``): one session per client session. The gateway gives
  the client its own ``Mcp-Session-Id`` (the remote server's is kept by the channel); every
  request is answered with ``application/json``; what the server sends on its own (the GET
  stream's ``list_changed``, its requests) goes to the client's GET stream; ``DELETE``
  ends the session.
* **2026-07-28 era** (a request carrying ``_meta`` protocol version, no session): the era
  is stateless, so each request gets its own session, which checks the server before the
  request is forwarded (a ``server/discover`` and every listing, then the request), and an
  answer stream (``text/event-stream``) that ends with the answer
  (``subscriptions/listen``: when either side closes it). Each request costs a full check.
* **only this machine**: the gateway listens on a loopback address only, and refuses a
  request whose ``Host`` is not the listening address (``localhost``, ``127.0.0.1`` or
  ``[::1]`` with its port) or whose ``Origin``, when present, is not ``http://`` one of
  those (HTTP 403), so a web page cannot reach it through DNS rebinding (MCP 2026-07-28,
  *Streamable HTTP*, "Security & Endpoint"). JSON-RPC batches are refused (400); a body
  is at most 64 MiB.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

from toolpin.core.wire import client_meta
from toolpin.errors import InputError
from toolpin.proxy.channel import signals_to_main
from toolpin.proxy.session import MAX_INSPECT, ProxyOptions, Session
from toolpin.remote.channel import RemoteChannel
from toolpin.remote.target import RemoteTarget, is_loopback_host

PATH: Final = "/mcp"
MAX_SESSIONS: Final = 64
MAX_EVENTS: Final = 1024
"""Server messages kept for a GET stream that is not open (older ones are dropped)."""
ANSWER_WAIT: Final = 600.0
"""Longest wait for the answer to one request, in seconds."""

Log = Callable[[str], None]


class _V6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def _key(id_: Any) -> str:
    return json.dumps(id_, sort_keys=True)


class Bridge:
    """One proxy session seen from HTTP: client lines in, client lines out.

    ``per_request``: every line for the client goes to :attr:`stream` (a 2026-07-28
    request's answer stream); otherwise an answer goes to the request waiting for it and
    everything else to :attr:`stream` (the client's GET stream).
    """

    def __init__(
        self, target: RemoteTarget, options: ProxyOptions, log: Log, *, per_request: bool
    ) -> None:
        self.per_request = per_request
        self.stream: queue.Queue[bytes | None] = queue.Queue(MAX_EVENTS)
        self.ended = threading.Event()
        self.listening = threading.Lock()
        self.last_used = time.monotonic()
        self._lock = threading.Lock()
        self._waiting: dict[str, queue.SimpleQueue[bytes | None]] = {}
        self._input_open = True
        self._log = log
        self.channel = RemoteChannel(target, log=log)
        self.session = Session(
            options,
            write_server=self._to_server,
            write_client=self._to_client,
            log=log,
            terminate_server=self._terminate,
            close_server_input=self._close_input,
        )
        self.channel.session = self.session
        self.channel.hold_deadline(options.timeout)
        for body, name in ((self._pump, "toolpin-gw-server"), (self._watch, "toolpin-gw-clock")):
            threading.Thread(target=signals_to_main(body), name=name, daemon=True).start()

    # ---------------------------------------------------------------- session callbacks

    def _to_server(self, data: bytes) -> None:
        with self._lock:
            if self._input_open:
                self.channel.send(data)

    def _close_input(self) -> None:
        with self._lock:
            if not self._input_open:
                return
            self._input_open = False
        self.channel.close_input()

    def _terminate(self) -> None:
        self._close_input()
        self.channel.terminate()

    def _to_client(self, data: bytes) -> None:
        """Called with the session's lock held: never blocks."""
        for line in data.splitlines():
            if not line.strip():
                continue
            line += b"\n"
            waiter = None
            if not self.per_request:
                with contextlib.suppress(ValueError, RecursionError):
                    msg = json.loads(line)
                    if isinstance(msg, dict) and "method" not in msg and "id" in msg:
                        with self._lock:
                            waiter = self._waiting.get(_key(msg["id"]))
            if waiter is not None:
                waiter.put(line)
                continue
            try:
                self.stream.put_nowait(line)
            except queue.Full:
                with contextlib.suppress(queue.Empty):
                    self.stream.get_nowait()  # the oldest goes: a GET stream nobody reads
                with contextlib.suppress(queue.Full):
                    self.stream.put_nowait(line)

    # ------------------------------------------------------------------------- threads

    def _pump(self) -> None:
        from toolpin.proxy.relay import pump

        session = self.session
        try:
            pump(self.channel.receive, session.on_server_line, session.server_long_line)
        except Exception as exc:  # every fault must end the session cleanly
            session.on_fault(exc)
        session.on_server_exit(self.channel.wait())
        self.ended.set()
        with self._lock:
            waiters = list(self._waiting.values())
        for waiter in waiters:
            waiter.put(None)
        with contextlib.suppress(queue.Full):
            self.stream.put_nowait(None)

    def _watch(self) -> None:
        from toolpin.proxy.relay import watch_deadlines

        watch_deadlines(self.session, self.ended)

    # ---------------------------------------------------------------------- HTTP side

    def ask(self, line: bytes, id_: Any) -> bytes | None:
        """Send a client request; its answer line, or ``None`` when none came."""
        self.last_used = time.monotonic()
        waiter: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        key = _key(id_)
        with self._lock:
            self._waiting[key] = waiter
        try:
            self.session.on_client_line(line)
            if self.ended.is_set() and not self.session.keeps_answering() and waiter.empty():
                return None
            try:
                return waiter.get(timeout=ANSWER_WAIT)
            except queue.Empty:
                return None
        finally:
            with self._lock:
                self._waiting.pop(key, None)

    def tell(self, line: bytes) -> None:
        """A client notification, or its answer to a server request."""
        self.last_used = time.monotonic()
        self.session.on_client_line(line)

    def close(self) -> None:
        """The client is done: the session forwards what it holds, then ends."""
        self.session.on_client_eof()

        def finish() -> None:
            if self.channel.wait(10.0) is None:
                self._terminate()

        threading.Thread(target=signals_to_main(finish), daemon=True).start()


def _no_answer(id_: Any, text: str) -> bytes:
    error = {"jsonrpc": "2.0", "id": id_, "error": {"code": -32603, "message": f"toolpin: {text}"}}
    return json.dumps(error).encode() + b"\n"


class Gateway:
    """The listening side: sessions by ``Mcp-Session-Id``, the allowed Host and Origin."""

    def __init__(
        self, target: RemoteTarget, options: ProxyOptions, host: str, port: int, log: Log
    ) -> None:
        self.target = target
        self.options = options
        self.log = log
        self.host = host
        self.sessions: dict[str, Bridge] = {}
        self.lock = threading.Lock()
        server_class = _V6Server if ":" in host else ThreadingHTTPServer
        self.server = server_class((host, port), _handler(self))
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        names = {"localhost", "127.0.0.1", "[::1]", host if ":" not in host else f"[{host}]"}
        self.hosts = frozenset(f"{n}:{self.port}" for n in names)
        self.origins = frozenset(f"http://{h}" for h in self.hosts)

    @property
    def url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}{PATH}"

    def bridge(self, *, per_request: bool) -> Bridge:
        options = self.options
        if per_request:
            from dataclasses import replace

            options = replace(options, quiet=True)  # one check per request: not one line each
        return Bridge(self.target, options, self.log, per_request=per_request)

    def open_session(self) -> tuple[str, Bridge]:
        with self.lock:
            if len(self.sessions) >= MAX_SESSIONS:
                idle = min(self.sessions, key=lambda k: self.sessions[k].last_used)
                self.sessions.pop(idle).close()
            sid = os.urandom(16).hex()
            bridge = self.bridge(per_request=False)
            self.sessions[sid] = bridge
            return sid, bridge

    def close(self) -> None:
        self.server.shutdown()
        with self.lock:
            bridges = list(self.sessions.values())
            self.sessions.clear()
        for bridge in bridges:
            bridge.close()
        self.server.server_close()


def _handler(gateway: Gateway) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart
        server_version = "toolpin-gateway"
        sys_version = ""

        def log_message(self, format: str, *args: Any) -> None:
            return  # requests carry the client's data: never logged

        # ------------------------------------------------------------------ answers

        def _reply(
            self, status: int, body: bytes = b"", kind: str = "application/json", **extra: str
        ) -> None:
            self.send_response(status)
            if body or status not in (202, 204):
                self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            for name, value in extra.items():
                self.send_header(name.replace("_", "-"), value)
            self.end_headers()
            if body:
                self.wfile.write(body)

        def _error(
            self, status: int, code: int, text: str, id_: Any = None, *, unread: bool = False
        ) -> None:
            """A JSON-RPC error; ``unread``: the body was not read, so the connection
            closes (what is left of it must never be read as the next request)."""
            error = {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": text}}
            if unread:
                self.close_connection = True
                self._reply(status, json.dumps(error).encode(), Connection="close")
            else:
                self._reply(status, json.dumps(error).encode())

        def _allowed(self) -> bool:
            """Host and Origin name this machine (see the module docs); else 403."""
            host = self.headers.get("Host", "")
            origin = self.headers.get("Origin")
            if host.lower() not in gateway.hosts or (
                origin is not None and origin.lower() not in gateway.origins
            ):
                self._error(
                    403, -32600, "toolpin gateway: Host or Origin is not this machine", unread=True
                )
                return False
            if self.path.split("?", 1)[0] != PATH:
                self._error(
                    404, -32600, f"toolpin gateway: the MCP endpoint is {PATH}", unread=True
                )
                return False
            return True

        def _session(self) -> tuple[str | None, Bridge | None]:
            sid = self.headers.get("Mcp-Session-Id")
            if sid is None:
                return None, None
            with gateway.lock:
                return sid, gateway.sessions.get(sid)

        def _events(self, bridge: Bridge, until: Any = None, *, answer: bool) -> None:
            """Write the bridge's lines as an event stream; with ``answer``, until the
            answer to ``until``; otherwise until the session ends or the client goes."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            wanted = _key(until)
            try:
                while True:
                    try:
                        line = bridge.stream.get(timeout=15.0)
                    except queue.Empty:
                        self.wfile.write(b": keep-alive\n\n")
                        self.wfile.flush()
                        continue
                    if line is None:
                        if answer:
                            self.wfile.write(_event(_no_answer(until, "the remote server ended")))
                        return
                    self.wfile.write(_event(line))
                    self.wfile.flush()
                    if answer and _answers(line, wanted):
                        return
            except OSError:
                return  # the client closed the stream (for 2026-07-28: a cancellation)

        # ------------------------------------------------------------------ methods

        def do_POST(self) -> None:
            if not self._allowed():
                return
            try:
                size = int(self.headers.get("Content-Length", ""))
            except ValueError:
                self._error(
                    411, -32600, "toolpin gateway: a POST needs a Content-Length", unread=True
                )
                return
            if not 0 < size <= MAX_INSPECT:
                self._error(
                    413, -32600, "toolpin gateway: the body is empty or over 64 MiB", unread=True
                )
                return
            body = self.rfile.read(size)
            try:
                msg = json.loads(body)
            except (ValueError, RecursionError):
                self._error(400, -32700, "toolpin gateway: the body is not JSON")
                return
            if not isinstance(msg, dict):
                self._error(400, -32600, "toolpin gateway: one JSON-RPC message per POST")
                return
            line = body.strip().replace(b"\r", b" ").replace(b"\n", b" ") + b"\n"
            method = msg.get("method")
            is_request = isinstance(method, str) and "id" in msg
            sid, bridge = self._session()
            if sid is not None:
                if bridge is None:
                    self._error(404, -32600, "toolpin gateway: no such session")
                elif is_request and method != "initialize":
                    self._answer(bridge, line, msg["id"])
                elif is_request:
                    self._error(400, -32600, "toolpin gateway: initialize opens a new session")
                else:
                    bridge.tell(line)
                    self._reply(202)
                return
            if method == "initialize" and is_request:
                new_sid, bridge = gateway.open_session()
                self._answer(bridge, line, msg["id"], Mcp_Session_Id=new_sid)
                return
            if is_request and client_meta(msg.get("params")) is not None:
                bridge = gateway.bridge(per_request=True)
                try:
                    bridge.tell(line)
                    self._events(bridge, msg["id"], answer=True)
                finally:
                    bridge.close()
                return
            if not is_request and isinstance(method, str):
                self._reply(202)  # a sessionless notification: nothing to relate it to
                return
            self._error(400, -32600, "toolpin gateway: Mcp-Session-Id is missing")

        def _answer(self, bridge: Bridge, line: bytes, id_: Any, **extra: str) -> None:
            answer = bridge.ask(line, id_)
            if answer is None:
                answer = _no_answer(id_, "the remote server gave no answer")
            self._reply(200, answer, **extra)

        def do_GET(self) -> None:
            if not self._allowed():
                return
            sid, bridge = self._session()
            if sid is None:
                self._reply(405, Allow="POST")
                return
            if bridge is None:
                self._error(404, -32600, "toolpin gateway: no such session")
                return
            if not bridge.listening.acquire(blocking=False):
                self._error(409, -32600, "toolpin gateway: this session's GET stream is open")
                return
            try:
                self._events(bridge, answer=False)
            finally:
                bridge.listening.release()

        def do_DELETE(self) -> None:
            if not self._allowed():
                return
            sid, bridge = self._session()
            if sid is None or bridge is None:
                self._error(404, -32600, "toolpin gateway: no such session")
                return
            with gateway.lock:
                gateway.sessions.pop(sid, None)
            bridge.close()
            self._reply(204)

    return Handler


def _event(line: bytes) -> bytes:
    return b"event: message\ndata: " + line.rstrip(b"\r\n") + b"\n\n"


def _answers(line: bytes, wanted: str) -> bool:
    try:
        msg = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(msg, dict) and "method" not in msg and _key(msg.get("id")) == wanted


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` on this machine; raises :class:`InputError`."""
    host, colon, port_text = text.rpartition(":")
    host = host.strip("[]")
    if not colon or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise InputError("--listen must be HOST:PORT, e.g. 127.0.0.1:8765")
    if not is_loopback_host(host):
        raise InputError(
            "the gateway listens on this machine only (127.0.0.1, ::1 or localhost)",
            advice="It has no authentication of its own; never expose it to a network.",
        )
    return ("127.0.0.1" if host == "localhost" else host), int(port_text)


def run_gateway(
    listen: str,
    target: RemoteTarget,
    options: ProxyOptions,
    *,
    log: Log,
    ready: Callable[[Gateway], None] | None = None,
) -> int:
    """Serve until interrupted (SIGINT/SIGTERM); returns the exit code."""
    import signal

    host, port = parse_listen(listen)
    try:
        gateway = Gateway(target, options, host, port, log)
    except OSError as exc:
        raise InputError(f"cannot listen on {listen} ({exc.strerror or 'refused'})") from None
    log(f"toolpin: gateway for {target.label} at {gateway.url}")
    if ready is not None:
        ready(gateway)
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    serving = threading.Thread(target=gateway.server.serve_forever, daemon=True)
    serving.start()
    while not stop.wait(0.5):
        pass
    gateway.close()
    return 0


__all__ = ["Bridge", "Gateway", "parse_listen", "run_gateway"]
