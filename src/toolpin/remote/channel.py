"""``toolpin run --url URL``: the proxy in front of a remote MCP server.

The MCP client talks stdio to toolpin; toolpin talks HTTP to the server (Streamable HTTP,
or the legacy HTTP+SSE transport). The check is the stdio proxy's own
:class:`~toolpin.proxy.session.Session` and :mod:`~toolpin.proxy.relay`, unchanged: held
until verified, every listing checked for the whole session, both protocol eras, the same
-31042/-31043 errors and the same review/approve flow. Only the server side differs:
:class:`RemoteChannel`, a :class:`~toolpin.proxy.channel.ServerChannel`, turns client lines
into HTTP requests and HTTP answers into server lines (:mod:`toolpin.remote.streamable`,
:mod:`toolpin.remote.sse`). A remote server that misbehaves in a way toolpin cannot
classify ends the channel like a server process that died (the reason is on stderr).

``--transport auto`` (the default) starts with Streamable HTTP and falls back to HTTP+SSE
when the server answers the first POST with 404 or 405, as the MCP specification's
backwards-compatibility section describes.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

from toolpin.proxy.channel import signals_to_main
from toolpin.proxy.session import ProxyOptions, Session
from toolpin.remote.target import RemoteTarget


class RemoteChannel:
    """A :class:`~toolpin.proxy.channel.ServerChannel` over HTTP (see the module docs)."""

    def __init__(self, target: RemoteTarget, *, log: Any) -> None:
        self.target = target
        self._log = log
        self._out: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        self._partial: list[bytes] = []
        self._ended = threading.Event()
        self._closing = False
        self._switch = threading.Lock()
        self.code = 0
        self.session: Session | None = None
        self.inner: Any = self._new("sse" if target.transport == "sse" else "streamable-http")
        self.inner.start(self._out.put, self._on_closed)

    def _new(self, transport: str) -> Any:
        if transport == "sse":
            from toolpin.remote.sse import SseChannel

            return SseChannel(self.target, log=self._log)
        from toolpin.remote.streamable import StreamableHttpChannel

        return StreamableHttpChannel(
            self.target, log=self._log, allow_fallback=self.target.transport == "auto"
        )

    # ----------------------------------------------------------------- ServerChannel

    def send(self, data: bytes) -> None:
        """Client bytes: whole lines go out one request each (pieces are joined first)."""
        if self._closing:
            return
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            piece = data[start : nl + 1]
            if self._partial:
                self._partial.append(piece)
                piece = b"".join(self._partial)
                self._partial = []
            self._send_line(piece)
            start = nl + 1
        if start < len(data):
            self._partial.append(data[start:])

    def _send_line(self, line: bytes) -> None:
        if line.strip():
            with self._switch:
                self.inner.send(line)

    def receive(self) -> bytes:
        if self._ended.is_set() and self._out.empty():
            return b""
        return self._out.get()

    def close_input(self) -> None:
        """Half-close without blocking: answers in flight finish, then the output ends."""
        if self._closing:
            return
        self._closing = True

        def finish() -> None:
            with self._switch:
                inner = self.inner
            inner.close_input()
            self._end(1 if inner.fault else 0)

        threading.Thread(
            target=signals_to_main(finish), name="toolpin-http-close", daemon=True
        ).start()

    def terminate(self, *, force: bool = False) -> None:
        self._closing = True
        with self._switch:
            inner = self.inner
        inner.terminate()
        if force:
            self._end(self.code)

    def wait(self, timeout: float | None = None) -> int | None:
        if not self._ended.wait(timeout):
            return None
        return self.code

    def interrupt(self, signum: int) -> None:
        self.terminate()

    # ------------------------------------------------------------------------ inside

    def _end(self, code: int) -> None:
        if self._ended.is_set():
            return
        self.code = code
        self._ended.set()
        self._out.put(b"")

    def _on_closed(self, reason: str | None) -> None:
        if reason == "fallback":
            self._fall_back()
            return
        self._end(1 if reason else 0)

    def _fall_back(self) -> None:
        with self._switch:
            old = self.inner
            self._log(
                f"toolpin: {self.target.label} does not speak Streamable HTTP; "
                "using the HTTP+SSE transport"
            )
            new = self._new("sse")
            with old._cond:
                pending = [x for x in old._queue if x is not None]
                old._queue.clear()
            self.inner = new
            new.start(self._out.put, self._on_closed)
            if old.fallback_line is not None:
                new.send(old.fallback_line)
            for line in pending:
                new.send(line)

    def hold_deadline(self, timeout: float) -> None:
        """While a person is in the browser step, the check's clock stands still."""

        def watch() -> None:
            while not self._ended.is_set():
                time.sleep(0.2)
                auth = getattr(self.inner, "_auth", None)
                waiting = getattr(auth, "waiting_on_person", None)
                session = self.session
                if session is None or waiting is None or not waiting.is_set():
                    continue
                deadline = session.deadline
                if deadline is not None:
                    session.deadline = max(deadline, time.monotonic() + timeout)
                if session.settled():
                    return

        threading.Thread(
            target=signals_to_main(watch), name="toolpin-http-clock", daemon=True
        ).start()


def run_remote(target: RemoteTarget, options: ProxyOptions) -> int:
    """Run the proxy for a remote server until the client hangs up; the exit code."""
    import sys

    from toolpin.proxy.relay import Relay

    def log(text: str) -> None:
        try:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass

    channel = RemoteChannel(target, log=log)
    relay = Relay(options, channel)
    channel.session = relay.session
    channel.hold_deadline(options.timeout)
    return relay.run()
