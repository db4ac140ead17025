"""Start the MCP server process for the proxy: argv only, never a shell.

Standard library only: this is on every ``toolpin run`` start path.
"""

from __future__ import annotations

import signal
import subprocess
import sys

TYPE_CHECKING = False  # typing is not imported on the start path
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

EXIT_SPAWN = 127
"""Exit code when the server command cannot be started (as a shell would say)."""


def spawn_server(argv: Sequence[str], label: str) -> subprocess.Popen[bytes]:
    """Start the server (argv, never a shell) with piped stdin/stdout; stderr inherited.

    On Linux the server gets SIGTERM if the proxy dies. A command that cannot be started
    ends the proxy with exit code 127 (the argv is never printed: it may hold secrets).
    """
    kwargs: dict[str, Any] = {}
    if sys.platform.startswith("linux"):
        kwargs["preexec_fn"] = _die_with_parent()
    try:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,
            bufsize=0,
            **kwargs,
        )
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        from toolpin.core.render import visible

        sys.stderr.write(f"toolpin: cannot start the server {visible(label)}: {why}\n")
        sys.stderr.flush()
        raise SystemExit(EXIT_SPAWN) from None


def _die_with_parent() -> Callable[[], None]:
    """A ``preexec_fn`` asking Linux to SIGTERM the server if the proxy dies."""
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - not glibc/musl
        return lambda: None
    pr_set_pdeathsig = 1

    def preexec() -> None:  # pragma: no cover - runs in the child
        prctl(pr_set_pdeathsig, signal.SIGTERM)

    return preexec


def kill_unused(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server that was started but must not be used (nothing was sent to it)."""
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()
    if proc.poll() is None:
        proc.kill()
    proc.wait()
