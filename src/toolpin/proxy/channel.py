"""The server side of the proxy: what the relay needs from "the MCP server".

:class:`ServerChannel` is the whole interface between the relay
(:mod:`toolpin.proxy.relay`) and a server. The relay frames, classifies and checks every
line itself; a channel only moves bytes:

``send(data)``
    Write client bytes to the server: one or more whole newline-terminated lines, or the
    pieces of one line too long to hold (streamed to a released server). Never called
    after ``close_input``. A server that is gone is not an error here (the end of
    ``receive`` reports it): a failed write is dropped silently.
``receive()``
    Block until the server has output and return it: a chunk of bytes split anywhere
    (the relay re-frames lines), ``b""`` once the server has no more output. Called from
    one thread only.
``close_input()``
    Half-close: the client has nothing more to send; the server may still answer what it
    has. Idempotent.
``terminate(force=False)``
    Ask the server to stop now (``force``: without delay). Never blocks; idempotent; may be
    called from any thread, also after the server ended.
``wait(timeout)``
    The server's exit code once it has ended, or ``None`` if it is still running after
    ``timeout`` seconds (``None``: wait as long as it takes). Codes follow
    :mod:`subprocess`: a negative code is the signal that ended the process. A channel
    without a process reports ``0`` for a clean end and ``1`` for a failed one.
``interrupt(signum)``
    Pass on a SIGINT/SIGTERM the proxy received (a channel without a process may treat it
    as ``terminate()``).

The relay calls ``send`` and ``close_input`` under one lock (never at the same time), and
only from its reader threads.

:class:`SubprocessChannel` is the stdio channel: a server started by
:func:`toolpin.proxy.spawn.spawn_server` on pipes. Its ``send`` and ``receive`` are one
``os.write``/``os.read`` each (raw bytes, no buffering layer), so the hot path costs what
a direct pipe costs. Standard library only: this module is on the ``toolpin run`` path.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

TYPE_CHECKING = False  # typing is not imported on the start path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Protocol
else:
    Protocol = object

READ_SIZE = 1 << 16
"""Bytes asked of the operating system per read."""


class ServerChannel(Protocol):
    """Where the relay's server-side bytes go and come from (see the module docstring)."""

    def send(self, data: bytes) -> None:
        """Write client bytes to the server (dropped silently if the server is gone)."""

    def receive(self) -> bytes:
        """The next chunk of server output; ``b""`` at the end."""

    def close_input(self) -> None:
        """Half-close: nothing more will be sent (idempotent)."""

    def terminate(self, *, force: bool = False) -> None:
        """Ask the server to stop; never blocks (idempotent)."""

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit code once ended, ``None`` while still running after ``timeout``."""

    def interrupt(self, signum: int) -> None:
        """Pass on a signal the proxy received."""


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (one ``os.write`` in the common case)."""
    written = os.write(fd, data)
    if written == len(data):
        return
    view = memoryview(data)[written:]
    while view:
        written = os.write(fd, view)
        view = view[written:]


class SubprocessChannel:
    """A server process on pipes (stdin/stdout; its stderr is the proxy's)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.stdin is None or proc.stdout is None:
            raise ValueError("the server process needs piped stdin and stdout")
        self.proc = proc
        self._in: int | None = proc.stdin.fileno()
        self._out = proc.stdout.fileno()

    def send(self, data: bytes) -> None:
        fd = self._in
        if fd is None:
            return
        try:  # noqa: SIM105 - try/except costs less than suppress() on the hot path
            write_all(fd, data)
        except OSError:
            pass  # the server is gone; the reader of its output sees the end

    def receive(self) -> bytes:
        try:
            return os.read(self._out, READ_SIZE)
        except OSError:
            return b""

    def close_input(self) -> None:
        if self._in is None:
            return
        self._in = None
        stdin = self.proc.stdin
        if stdin is not None:  # closed through its owner: no double close
            with contextlib.suppress(OSError):
                stdin.close()

    def terminate(self, *, force: bool = False) -> None:
        if self.proc.poll() is not None:
            return
        with contextlib.suppress(OSError):
            if force:
                self.proc.kill()
            else:
                self.proc.terminate()

    def wait(self, timeout: float | None = None) -> int | None:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def interrupt(self, signum: int) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.send_signal(signum)


def signals_to_main(target: Callable[..., None]) -> Callable[..., None]:
    """Wrap a thread's target so the thread blocks SIGINT and SIGTERM first.

    Python runs signal handlers in the main thread only, but the kernel may deliver a
    process signal to any thread: one delivered to a worker blocked in a read would leave
    the main thread asleep in its own read and the signal unhandled (a client's SIGTERM
    never reaching the server). Every proxy thread starts through this.
    """

    def body(*args: object) -> None:
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        target(*args)

    return body
