"""Probe a local server over stdio in the sandbox, keeping a bounded tail of its stderr.

The probe itself is :func:`toolpin.probe.probe_stdio` (the same wire code as ``toolpin
lock`` and the proxy, so the log records exactly the hashes they compute). The
placeholder rule needs the last few KiB of the server's stderr: ``probe_stdio`` keeps them
in a :class:`~toolpin.probe.StderrTail` of :data:`STDERR_TAIL_BYTES`. The tail is matched
against variable names, and a failure carries a short, sanitised hint of it
(:class:`~toolpin.crawl.hint.ServerFailed`); it never goes into the log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from toolpin.core.render import counted
from toolpin.crawl.hint import ServerFailed, stderr_hint
from toolpin.crawl.sandbox import missing_variables, placeholder_plan
from toolpin.errors import ProbeError
from toolpin.probe.conversation import ProbeResult
from toolpin.probe.stdio import StderrTail, probe_stdio

STDERR_TAIL_BYTES: Final = 16 << 10
MAX_STDOUT_BYTES: Final = 8 << 20


def run_with_stderr(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    timeout: float,
    max_output: int = MAX_STDOUT_BYTES,
) -> tuple[ProbeResult | None, ProbeError | None, str]:
    """One probe: ``(result, None, stderr)`` or ``(None, error, stderr)``."""
    tail = StderrTail(STDERR_TAIL_BYTES)
    try:
        result = probe_stdio(
            argv, env=env, cwd=cwd, timeout=timeout, max_output=max_output, stderr_tail=tail
        )
    except ProbeError as exc:
        return None, exc, tail.text()
    return result, None, tail.text()


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
    max_output: int = MAX_STDOUT_BYTES,
) -> StdioOutcome:
    """Probe ``argv`` in ``env``; retry once with placeholder credentials when the rule
    allows it (see :mod:`toolpin.crawl.sandbox`). Raises :class:`ServerFailed` (a
    :class:`ProbeError` carrying the server's stderr hint)."""
    result, error, stderr = run_with_stderr(
        argv, env=env, cwd=cwd, timeout=timeout, max_output=max_output
    )
    if result is not None:
        return StdioOutcome(result, tuple(sorted(env)), ())
    assert error is not None
    missing = missing_variables(stderr)
    plan = placeholder_plan(missing, env)
    if plan is None:
        if missing:
            raise ServerFailed(
                f"{error.message}; it asks for {counted(len(missing), 'variable')}, not all "
                "of them credentials, so no placeholder retry",
                hint=stderr_hint(stderr),
            )
        raise ServerFailed(error.message, hint=stderr_hint(stderr))
    retry_env = {**env, **plan}
    result, error, stderr = run_with_stderr(
        argv, env=retry_env, cwd=cwd, timeout=timeout, max_output=max_output
    )
    if result is None:
        assert error is not None
        raise ServerFailed(
            f"{error.message} (also with placeholder credentials)", hint=stderr_hint(stderr)
        )
    return StdioOutcome(result, tuple(sorted(retry_env)), tuple(sorted(plan)))
