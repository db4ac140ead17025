"""Start a local MCP server, read everything the model would read, stop it.

Used by ``toolpin lock`` and the public log's crawler. The conversation is
:func:`toolpin.probe.conversation.converse` (the same for HTTP); this module is its stdio
transport: each connection is one server process, one JSON-RPC message per line.

Why not the MCP SDK's client here: its wire models drop members they do not know and its
JSON reader resolves repeated member names silently, so hashes computed from SDK objects
would differ from what the proxy hashes on the raw wire.

The server runs in its own process group and the whole group is killed at the end
(``npx`` and ``uvx`` start children that would otherwise outlive it).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Final

from toolpin import __version__
from toolpin.core.canonical import parse_json
from toolpin.errors import JSONError, ProbeError
from toolpin.probe.conversation import (
    FALLBACK_AFTER,
    Era,
    Failed,
    Inbox,
    ProbeResult,
    Received,
    converse,
)

DEFAULT_TIMEOUT: Final = 60.0
MAX_OUTPUT: Final = 64 << 20
"""Most bytes a server may write to stdout during one probe."""
_CHUNK: Final = 1 << 20
CLIENT_INFO: Final = {"name": "toolpin-probe", "version": __version__}


class StderrTail:
    """Keeps the last ``limit`` bytes servers write to stderr (for a caller's own rules,
    such as the crawler's placeholder-credential retry; never put into a message). Every
    process of one probe (a fallback connection starts a second one) writes into it."""

    def __init__(self, limit: int = 16 * 1024) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def _drain(self, stream: Any) -> None:
        try:
            for chunk in iter(lambda: stream.read1(65536), b""):
                with self._lock:
                    self._buffer += chunk
                    if len(self._buffer) > self.limit:
                        del self._buffer[: len(self._buffer) - self.limit]
        except (OSError, ValueError):
            pass

    def attach(self, stream: Any) -> None:
        """Start draining ``stream`` (a server's stderr pipe)."""
        thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._threads.append(thread)
        thread.start()

    def finish(self) -> None:
        """Wait briefly for the last bytes after the servers stopped."""
        for thread in self._threads:
            thread.join(timeout=1.0)

    def text(self) -> str:
        """The tail as text (undecodable bytes replaced)."""
        with self._lock:
            return bytes(self._buffer).decode("utf-8", "replace")


class StdioChannel:
    """One server process: lines in on stdin, lines out on stdout (read by a thread)."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        inbox: Inbox,
        *,
        id_prefix: str,
        max_output: int,
    ) -> None:
        self.proc = proc
        self.inbox = inbox
        self.id_marker = id_prefix.encode()
        self.max_output = max_output
        self._closed = False
        self._failed = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        # One message per complete line, however long (up to ``max_output`` in total).
        stdout = self.proc.stdout
        assert stdout is not None
        total = 0
        parts: list[bytes] = []
        try:
            while True:
                chunk = stdout.readline(_CHUNK)
                if not chunk:
                    break
                total += len(chunk)
                if total > self.max_output:
                    error = ProbeError("the server wrote more output than the probe accepts")
                    self.inbox.put(Failed(self, error, final=True))
                    return
                parts.append(chunk)
                if chunk.endswith(b"\n"):
                    if not self._line(b"".join(parts)):
                        return
                    parts = []
        except (OSError, ValueError):
            pass
        if parts and not self._line(b"".join(parts)):
            return
        if not self._closed:
            reason = self._exit_reason("before it listed its definitions")
            self.inbox.put(Failed(self, ProbeError(reason)))

    def _line(self, line: bytes) -> bool:
        """Post one line's message; False when the conversation cannot go on."""
        if not line.strip():
            return True
        try:
            message = parse_json(line)
        except JSONError as exc:
            if b'"id"' in line and self.id_marker in line:
                error = ProbeError(f"the server's answer is not strict JSON ({exc.message})")
                self.inbox.put(Failed(self, error, final=True))
                return False
            return True  # a log line on stdout; ignore it
        if isinstance(message, dict):
            self.inbox.put(Received(self, message))
        return True

    def _exit_reason(self, when: str) -> str:
        try:  # its output just ended: give it a moment to finish exiting
            code: int | None = self.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            code = None
        if code is None:
            return f"the server closed its output {when}"
        return f"the server exited (code {code}) {when}"

    def send(self, message: Mapping[str, Any]) -> None:
        if self._closed or self._failed:
            return
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            self._failed = True
            reason = self._exit_reason("before it could be listed")
            self.inbox.put(Failed(self, ProbeError(reason)))

    def close(self) -> None:
        """Close the server's input, then end its whole process group (TERM, then KILL)."""
        if self._closed:
            return
        self._closed = True
        proc = self.proc
        with contextlib.suppress(OSError, ValueError):
            if proc.stdin is not None:
                proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)
        for sig in (signal.SIGTERM, getattr(signal, "SIGKILL", signal.SIGTERM)):
            if os.name == "posix":
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, sig)
            elif proc.poll() is None:  # pragma: no cover - Windows
                proc.kill()
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                continue
            if os.name == "posix":
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)  # children left in the group
            break
        # Closing stdout while the reader thread is inside a read would wait for that
        # read; a process outside the group may still hold the pipe, so only close a
        # drained pipe.
        self.reader.join(timeout=1.0)
        if not self.reader.is_alive():
            with contextlib.suppress(OSError):
                if proc.stdout is not None:
                    proc.stdout.close()


class StdioTransport:
    """Starts ``argv`` once per connection (in its own process group)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        max_output: int = MAX_OUTPUT,
        stderr_tail: StderrTail | None = None,
    ) -> None:
        if not argv:
            raise ProbeError("empty server command")
        self.argv = list(argv)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.max_output = max_output
        self.stderr_tail = stderr_tail

    def connect(self, inbox: Inbox, *, id_prefix: str, deadline: float) -> StdioChannel:
        kwargs: dict[str, Any] = {}
        if os.name == "posix":
            kwargs["start_new_session"] = True
        else:  # pragma: no cover - Windows
            kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
        tail = self.stderr_tail
        try:
            proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE if tail is not None else subprocess.DEVNULL,
                env=self.env,
                cwd=self.cwd,
                **kwargs,
            )
        except OSError as exc:
            raise ProbeError(f"cannot start the server: {exc.strerror or exc}") from None
        if tail is not None and proc.stderr is not None:
            tail.attach(proc.stderr)
        return StdioChannel(proc, inbox, id_prefix=id_prefix, max_output=self.max_output)

    def close(self) -> None:
        if self.stderr_tail is not None:
            self.stderr_tail.finish()


def probe_stdio(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    era: Era = "auto",
    max_output: int = MAX_OUTPUT,
    fallback_after: float = FALLBACK_AFTER,
    capabilities: Mapping[str, Any] | None = None,
    stderr_tail: StderrTail | None = None,
) -> ProbeResult:
    """Start ``argv``, list everything, stop it. Raises :class:`ProbeError`.

    ``era`` is ``"auto"`` (discover, then initialize), ``"modern"`` or ``"handshake"``.
    ``timeout`` bounds the whole conversation, however slowly the server starts. With
    ``era="auto"``, a server silent for ``fallback_after`` seconds is also asked for the
    ``initialize`` handshake, in a second process; the first keeps its chance to answer
    (see :mod:`toolpin.probe.conversation`). ``max_output`` caps the bytes read from a
    server's stdout. ``capabilities`` are the client capabilities the probe declares
    (none by default); some servers offer more tools to a client that declares, say,
    ``roots``. Every process the probe started, and its process group, is stopped at the
    end. ``stderr_tail``, when given, keeps the end of the server's stderr.
    """
    if era not in ("auto", "modern", "handshake"):
        raise ProbeError(f"unknown protocol era {era!r} (auto, modern or handshake)")
    transport = StdioTransport(
        argv, env=env, cwd=cwd, max_output=max_output, stderr_tail=stderr_tail
    )
    try:
        return converse(
            transport,
            timeout=timeout,
            era=era,
            capabilities=capabilities,
            client_info=CLIENT_INFO,
            id_prefix="toolpin-probe",
            fallback_after=fallback_after,
        )
    finally:
        transport.close()


def main() -> None:  # pragma: no cover - debugging aid: python -m toolpin.probe.stdio CMD...
    result = probe_stdio(sys.argv[1:])
    print(
        json.dumps(
            {
                "era": result.era,
                "counts": result.snapshot.counts(),
                "surface": result.snapshot.surface_hash(),
            }
        )
    )


if __name__ == "__main__":  # pragma: no cover
    main()
