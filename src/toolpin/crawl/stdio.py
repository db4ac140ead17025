"""Probe a local server over stdio in the sandbox, keeping a bounded tail of its stderr.

The probe itself is :func:`toolpin.probe.probe_stdio` (the same wire code as ``toolpin
lock`` and the proxy, so the log records exactly the hashes they compute). That function
discards the server's stderr; the placeholder rule needs the last few KiB of it. So, on
POSIX, the command is started as ``/bin/sh -c 'exec "$@" 2>"$0"' <fifo> <argv...>``: the
shell replaces itself with the server (no extra process stays) after pointing its stderr at
a named pipe in the probe's scratch directory, and a thread here drains the pipe into a
ring buffer of :data:`STDERR_TAIL_BYTES`. The arguments are passed as separate words, never
through shell parsing. Elsewhere the probe runs without a stderr tail (and so without the
placeholder retry).
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final

from toolpin.crawl.sandbox import missing_variables, placeholder_plan
from toolpin.errors import ProbeError
from toolpin.probe import ProbeResult, probe_stdio

STDERR_TAIL_BYTES: Final = 16 << 10
MAX_STDOUT_BYTES: Final = 8 << 20
_SHELL: Final = "/bin/sh"
_EXEC_WITH_STDERR: Final = 'exec "$@" 2>"$0"'


class StderrTail:
    """A named pipe whose last ``limit`` bytes are kept (context manager)."""

    def __init__(self, directory: Path, limit: int = STDERR_TAIL_BYTES) -> None:
        self.path = directory / f"stderr-{os.urandom(4).hex()}.fifo"
        self.limit = limit
        self._buffer = bytearray()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._read_fd = -1
        self._keep_fd = -1
        self._thread: threading.Thread | None = None

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` started with its stderr sent to the pipe."""
        return [_SHELL, "-c", _EXEC_WITH_STDERR, str(self.path), *argv]

    def __enter__(self) -> StderrTail:
        os.mkfifo(self.path, 0o600)
        self._read_fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        # A writer of our own keeps the pipe from reading as closed before the server
        # opens it; it is closed when the probe is over.
        self._keep_fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()
        return self

    def _drain(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self._read_fd], [], [], 0.1)
            except (OSError, ValueError):
                return
            if not ready:
                if self._stop.is_set():
                    return
                continue
            try:
                chunk = os.read(self._read_fd, 65536)
            except BlockingIOError:
                continue
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self._buffer += chunk
                if len(self._buffer) > self.limit:
                    del self._buffer[: len(self._buffer) - self.limit]

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop draining (after what is already written is read) and remove the pipe."""
        if self._keep_fd >= 0:
            os.close(self._keep_fd)
            self._keep_fd = -1
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        if self._read_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._read_fd)
            self._read_fd = -1
        with contextlib.suppress(OSError):
            self.path.unlink()

    def text(self) -> str:
        """The tail as text (undecodable bytes replaced)."""
        with self._lock:
            return bytes(self._buffer).decode("utf-8", "replace")


def run_with_stderr(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    timeout: float,
    scratch: Path,
    max_output: int = MAX_STDOUT_BYTES,
) -> tuple[ProbeResult | None, ProbeError | None, str]:
    """One probe: ``(result, None, stderr)`` or ``(None, error, stderr)``."""
    if os.name != "posix" or not Path(_SHELL).exists():  # pragma: no cover - Windows
        try:
            return (
                probe_stdio(argv, env=env, cwd=cwd, timeout=timeout, max_output=max_output),
                None,
                "",
            )
        except ProbeError as exc:
            return None, exc, ""
    with StderrTail(scratch) as tail:
        try:
            result = probe_stdio(
                tail.wrap(argv), env=env, cwd=cwd, timeout=timeout, max_output=max_output
            )
        except ProbeError as exc:
            error: ProbeError | None = exc
            result = None
        else:
            error = None
    return result, error, tail.text()


@dataclass(frozen=True)
class StdioOutcome:
    """A successful sandboxed stdio probe."""

    result: ProbeResult
    env_names: tuple[str, ...]
    placeholders: tuple[str, ...]


def probe_sandboxed(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    timeout: float,
    scratch: Path,
    max_output: int = MAX_STDOUT_BYTES,
) -> StdioOutcome:
    """Probe ``argv`` in ``env``; retry once with placeholder credentials when the rule
    allows it (see :mod:`toolpin.crawl.sandbox`). Raises :class:`ProbeError`."""
    result, error, stderr = run_with_stderr(
        argv, env=env, cwd=cwd, timeout=timeout, scratch=scratch, max_output=max_output
    )
    if result is not None:
        return StdioOutcome(result, tuple(sorted(env)), ())
    assert error is not None
    missing = missing_variables(stderr)
    plan = placeholder_plan(missing, env)
    if plan is None:
        if missing:
            raise ProbeError(
                f"{error.message}; it asks for {len(missing)} variable(s), not all of them "
                "credentials, so no placeholder retry"
            )
        raise error
    retry_env = {**env, **plan}
    result, error, _ = run_with_stderr(
        argv, env=retry_env, cwd=cwd, timeout=timeout, scratch=scratch, max_output=max_output
    )
    if result is None:
        assert error is not None
        raise ProbeError(f"{error.message} (also with placeholder credentials)")
    return StdioOutcome(result, tuple(sorted(retry_env)), tuple(sorted(plan)))
