"""The proxy's plumbing: the client's stdio, a :class:`ServerChannel`, threads and exit.

:class:`toolpin.proxy.session.Session` decides; this module moves bytes. One reader
thread per direction (the client's stdin on the main thread, the server's output on
``toolpin-server``), a watchdog for the connect deadline, signal forwarding, and the
order of shutdown:

* the client closes its stdin (half-close): the session is told (it still forwards, or
  answers with the block error, every request it holds), and only then is the server's
  input closed; the proxy exits when the server's output ends;
* the server's output ends: the proxy exits with the session's code, unless the session
  was blocked at connect, which keeps answering the client with the error until the
  client hangs up;
* a session that stops (block, could not verify) terminates the server at once.

Every exception raised by the session on a reader thread ends the proxy through
:meth:`Session.on_fault` (a -31043 to every waiting request, exit 2): no thread dies
silently.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from toolpin.proxy.channel import READ_SIZE, ServerChannel, signals_to_main, write_all
from toolpin.proxy.session import MAX_INSPECT, ProxyOptions, Session


def _blank(line: bytes) -> bool:
    return len(line) <= 2 and not line.strip()


def watch_deadlines(session: Session, stop: threading.Event) -> None:
    """Tell ``session`` of its deadlines every 50 ms until the verdict (release or block),
    or until ``stop`` is set. Deadlines exist only until the verdict."""
    while not stop.is_set():
        time.sleep(0.05)
        if session.deadline is not None:
            session.on_deadline()
        if session.settled():
            return


def pump(
    read: Callable[[], bytes],
    on_line: Callable[[bytes], None],
    on_long: Callable[[bytes], Callable[[bytes], None] | None],
) -> None:
    """Read newline-delimited messages from ``read()`` until it returns ``b""``.

    Every complete line up to :data:`MAX_INSPECT` bytes goes to ``on_line`` whole, with
    its newline (blank lines are skipped; a last line without one gets one). A longer
    line is offered to ``on_long`` with its first bytes: it returns where to stream the
    line, or ``None`` to drop it.
    """
    parts: list[bytes] = []
    held = 0
    sink: Callable[[bytes], None] | None = None
    dropping = False
    while True:
        data = read()
        if not data:
            if parts:
                tail = b"".join(parts)
                if tail.strip():
                    on_line(tail + b"\n")
            return
        start = 0
        if sink is not None or dropping:
            nl = data.find(b"\n")
            if nl < 0:
                if sink is not None:
                    sink(data)
                continue
            if sink is not None:
                sink(data[: nl + 1])
            sink = None
            dropping = False
            start = nl + 1
        nl = data.find(b"\n", start)
        if nl >= 0 and parts:
            parts.append(data[start : nl + 1])
            line = b"".join(parts)
            parts = []
            held = 0
            if not _blank(line):
                on_line(line)
            start = nl + 1
            nl = data.find(b"\n", start)
        while nl >= 0:
            line = data[start : nl + 1]
            if not _blank(line):
                on_line(line)
            start = nl + 1
            nl = data.find(b"\n", start)
        if start < len(data):
            rest = data[start:]
            parts.append(rest)
            held += len(rest)
            if held > MAX_INSPECT:
                sink = on_long(parts[0])
                if sink is None:
                    dropping = True
                else:
                    for part in parts:
                        sink(part)
                parts = []
                held = 0


def _fd_reader(fd: int, wake: int | None = None) -> Callable[[], bytes]:
    """A reader of ``fd``. With ``wake`` (the read end of the signal wake-up pipe, see
    :meth:`Relay._wake_on_signals`) it waits on both, so that a signal always reaches its
    Python handler at once: a signal that arrives just before a blocking ``read`` of
    ``fd`` would otherwise be handled only when the client next writes."""
    if wake is None:

        def read() -> bytes:
            try:
                return os.read(fd, READ_SIZE)
            except OSError:
                return b""

        return read

    import select

    def read_or_wake() -> bytes:
        try:
            while True:
                ready, _, _ = select.select([fd, wake], [], [])
                if wake in ready:
                    os.read(wake, 512)  # drained; the handler runs as this returns
                if fd in ready:
                    return os.read(fd, READ_SIZE)
        except OSError:
            return b""

    return read_or_wake


SERVER_GRACE: Final = 10.0
"""Seconds a server may take to exit after its input closed, before it is terminated."""
KILL_GRACE: Final = 3.0
"""Seconds between terminating a server and killing it."""


class Relay:
    """One proxy run: the client's stdio, the server channel, the session."""

    def __init__(self, options: ProxyOptions, channel: ServerChannel) -> None:
        self.options = options
        self.channel = channel
        self.client_in = sys.stdin.fileno()
        self.client_out = sys.stdout.fileno()
        self.out_lock = threading.Lock()
        self.server_lock = threading.Lock()
        self.server_open = True
        self.input_closed = threading.Event()
        self.exiting = threading.Event()
        self.session = Session(
            options,
            write_server=self.write_server,
            write_client=self.write_client,
            log=self.log,
            terminate_server=self.terminate_server,
            close_server_input=self.close_server_input,
        )

    # writes (called with the session lock held; these locks are leaves)
    def write_client(self, data: bytes) -> None:
        with self.out_lock:
            try:
                write_all(self.client_out, data)
            except OSError:
                code = self.session.exit_code
                self.shutdown(code if code is not None else 0)

    def write_server(self, data: bytes) -> None:
        with self.server_lock:
            if self.server_open:
                self.channel.send(data)

    def log(self, text: str) -> None:
        try:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass

    def close_server_input(self) -> None:
        with self.server_lock:
            if self.server_open:
                self.server_open = False
                self.channel.close_input()
        self.input_closed.set()

    def terminate_server(self) -> None:
        self.close_server_input()
        self.channel.terminate()

    def shutdown(self, code: int) -> None:
        """End the proxy now (from any thread): stop the server, exit with ``code``."""
        if self.exiting.is_set():
            return
        self.exiting.set()
        self.terminate_server()
        if self.channel.wait(KILL_GRACE) is None:
            self.channel.terminate(force=True)
            self.channel.wait()
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        os._exit(code)

    def _wake_on_signals(self) -> int | None:
        """The read end of a pipe the interpreter writes a byte to on every signal
        (``signal.set_wakeup_fd``), or ``None`` where that cannot be used."""
        if os.name != "posix" or threading.current_thread() is not threading.main_thread():
            return None
        try:
            wake_read, wake_write = os.pipe()
            os.set_blocking(wake_write, False)
            signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        except (OSError, ValueError):
            return None
        return wake_read

    def run(self) -> int:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._forward_signal)
        wake = self._wake_on_signals()
        server_reader = threading.Thread(
            target=signals_to_main(self._guarded),
            args=(self._pump_server,),
            name="toolpin-server",
            daemon=True,
        )
        server_reader.start()
        threading.Thread(
            target=signals_to_main(self._guarded),
            args=(self._watchdog,),
            name="toolpin-watchdog",
            daemon=True,
        ).start()
        session = self.session
        client = _fd_reader(self.client_in, wake)
        self._guarded(lambda: pump(client, session.on_client_line, session.client_long_line))
        # The client closed its side. The session forwards (or answers) what it holds,
        # then closes the server's input; the server finishes its answers and exits.
        self._guarded(session.on_client_eof)
        # A session still verifying closes it at its verdict (bounded by --timeout).
        self.input_closed.wait(self.options.timeout + SERVER_GRACE)
        code = self.channel.wait(SERVER_GRACE)
        if code is None:
            self.channel.terminate()
            if self.channel.wait(KILL_GRACE) is None:
                self.channel.terminate(force=True)
        server_reader.join(timeout=5)
        self.exiting.set()
        final = self.channel.wait()
        return session.on_server_exit(final)

    def _guarded(self, body: Callable[[], None]) -> None:
        """Run a thread's body; an exception ends the session cleanly (-31043, exit 2)."""
        try:
            body()
        except Exception as exc:  # every fault must end the session cleanly
            self.session.on_fault(exc)
            self.shutdown(self.session.exit_code or 2)

    def _forward_signal(self, signum: int, _frame: Any) -> None:
        self.channel.interrupt(signum)

    def _watchdog(self) -> None:
        watch_deadlines(self.session, self.exiting)

    def _pump_server(self) -> None:
        session = self.session
        pump(self.channel.receive, session.on_server_line, session.server_long_line)
        code = session.on_server_exit(self.channel.wait())
        if session.keeps_answering():
            return  # the main thread answers the client with the error until it hangs up
        self.shutdown(code)


def run(options: ProxyOptions, channel: ServerChannel) -> int:
    """Run the proxy until the client hangs up (or the server ends); returns the exit code."""
    return Relay(options, channel).run()
