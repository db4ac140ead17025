"""``toolpin run --url URL``: the proxy in front of a remote MCP server.

The MCP client talks stdio to toolpin; toolpin talks HTTP to the server (Streamable HTTP,
or the legacy HTTP+SSE transport). The check is the stdio proxy's own
:class:`~toolpin.proxy.session.Session`, unchanged: held until verified, every listing
checked for the whole session, both protocol eras, the same -31042/-31043 errors and the
same review/approve flow. Only the server side differs: a remote channel
(:mod:`toolpin.proxy.remote_http`, :mod:`toolpin.proxy.remote_sse`) turns client lines
into HTTP requests and HTTP answers into server lines.

``--transport auto`` (the default) starts with Streamable HTTP and falls back to HTTP+SSE
when the server answers the first POST with 404 or 405, as the MCP specification's
backwards-compatibility section describes.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import Any

from toolpin.proxy.remote_target import RemoteTarget
from toolpin.proxy.session import BLOCKED, RELEASED, ProxyOptions, Session, pump

EXIT_FAULT = 2


class _RemoteRelay:
    """Client stdio on one side, a remote channel on the other, the session between."""

    def __init__(self, target: RemoteTarget, options: ProxyOptions) -> None:
        self.target = target
        self.options = options
        self.client_in = sys.stdin.fileno()
        self.client_out = sys.stdout.fileno()
        self.out_lock = threading.Lock()
        self.exiting = threading.Event()
        self.session: Session | None = None
        self.channel: Any = None
        self._switch = threading.Lock()

    # ------------------------------------------------------------------ session callbacks

    def write_client(self, data: bytes) -> None:
        with self.out_lock:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self.client_out, view) :]
            except OSError:
                session = self.session
                code = session.exit_code if session is not None else None
                self.shutdown(code if code is not None else 0)

    def write_server(self, data: bytes) -> None:
        self.channel.send(data)

    def log(self, text: str) -> None:
        try:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass

    def terminate_server(self) -> None:
        self.channel.terminate()

    # --------------------------------------------------------------------------- channel

    def _new_channel(self, transport: str) -> Any:
        if transport == "sse":
            from toolpin.proxy.remote_sse import SseChannel

            return SseChannel(self.target, log=self.log)
        from toolpin.proxy.remote_http import StreamableHttpChannel

        return StreamableHttpChannel(
            self.target, log=self.log, allow_fallback=self.target.transport == "auto"
        )

    def on_channel_closed(self, reason: str | None) -> None:
        if reason == "fallback":
            self._fall_back()
            return
        session = self.session
        if session is None or self.exiting.is_set():
            return
        code = session.on_server_exit(EXIT_FAULT if reason else 0)
        if session.keeps_answering():
            return  # the main thread answers the client with the error until it hangs up
        self.shutdown(code)

    def _fall_back(self) -> None:
        with self._switch:
            old = self.channel
            self.log(
                f"toolpin: {self.target.label} does not speak Streamable HTTP; "
                "using the HTTP+SSE transport"
            )
            new = self._new_channel("sse")
            with old._cond:
                pending = [x for x in old._queue if x is not None]
                old._queue.clear()
            self.channel = new
            new.start(self._deliver, self.on_channel_closed)
            if old.fallback_line is not None:
                new.send(old.fallback_line)
            for line in pending:
                new.send(line)

    def _deliver(self, line: bytes) -> None:
        session = self.session
        if session is not None and not self.exiting.is_set():
            session.on_server_line(line)

    # ---------------------------------------------------------------------------- ending

    def shutdown(self, code: int) -> None:
        """End the proxy now (from any thread)."""
        if self.exiting.is_set():
            return
        self.exiting.set()
        channel = self.channel
        if channel is not None:
            with contextlib.suppress(Exception):
                channel.terminate()
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        os._exit(code)

    def _watchdog(self) -> None:
        while not self.exiting.is_set():
            time.sleep(0.05)
            session = self.session
            if session is None:
                continue
            auth = getattr(self.channel, "_auth", None)
            waiting = getattr(auth, "waiting_on_person", None)
            if waiting is not None and waiting.is_set() and session.deadline is not None:
                # A person is logging in: the check's clock stops meanwhile.
                session.deadline = max(session.deadline, time.monotonic() + self.options.timeout)
            if session.deadline is not None:
                session.on_deadline()
            if session.state in (RELEASED, BLOCKED):
                return

    def run(self) -> int:
        transport = "sse" if self.target.transport == "sse" else "streamable-http"
        self.channel = self._new_channel(transport)
        self.session = Session(
            self.options,
            write_server=self.write_server,
            write_client=self.write_client,
            log=self.log,
            terminate_server=self.terminate_server,
        )
        self.channel.start(self._deliver, self.on_channel_closed)
        threading.Thread(target=self._watchdog, name="toolpin-watchdog", daemon=True).start()
        session = self.session
        pump(self.client_in, session.on_client_line, session.client_long_line)
        # The client hung up: let answers in flight finish, end the server's session.
        self.channel.close_input()
        self.exiting.set()
        return session.on_server_exit(EXIT_FAULT if self.channel.fault else 0)


def run_remote(target: RemoteTarget, options: ProxyOptions) -> int:
    """Run the proxy for a remote server until the client hangs up; the exit code."""
    return _RemoteRelay(target, options).run()
