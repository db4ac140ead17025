"""A short, safe tail of what a failing server or installer wrote to stderr.

A failure reason is fixed text written by toolpin (``npm install failed (exit code 1)``);
it says *that* something failed. The hint says *why*, in the tool's own words: the last
non-empty lines of its stderr (for npm, whose error report puts the code and the message
first, the first lines of its last ``npm error`` / ``npm ERR!`` block, without the pointer
to its debug log), at most :data:`HINT_CHARS` characters, with terminal colour codes
removed and every unsafe character (control, bidi, zero-width, tag) made visible by
:func:`toolpin.core.render.visible`. Hints are shown in the crawl's output and kept in
crawl state; they are never written into the log, never into an MCP message.
"""

from __future__ import annotations

import re
from typing import Final

from toolpin.errors import PackageError, ProbeError

HINT_CHARS: Final = 240
HINT_LINES: Final = 3
_ANSI: Final = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_NPM_ERROR: Final = re.compile(r"^npm (?:error|ERR!)")
_BOILERPLATE: Final = re.compile(r"A complete log of this run can be found in", re.IGNORECASE)
"""Lines that say nothing about the failure (npm's pointer to its debug log)."""


def stderr_hint(text: str, limit: int = HINT_CHARS) -> str | None:
    """The last few non-empty lines of ``text`` joined by `` | ``, made safe; ``None`` if
    there is nothing to say."""
    lines = [ln.strip() for ln in _ANSI.sub("", text).splitlines()]
    lines = [ln for ln in lines if ln and not _BOILERPLATE.search(ln)]
    if not lines:
        return None
    if _NPM_ERROR.match(lines[-1]):
        start = len(lines) - 1
        while start > 0 and _NPM_ERROR.match(lines[start - 1]):
            start -= 1
        lines = lines[start : start + HINT_LINES]
    from toolpin.core.render import visible

    joined = visible(" | ".join(lines[-HINT_LINES:]))
    return joined if len(joined) <= limit else "…" + joined[-(limit - 1) :]


class InstallFailed(PackageError):
    """An install that failed; ``hint`` is the installer's stderr tail (made safe)."""

    def __init__(self, message: str, *, hint: str | None) -> None:
        super().__init__(message)
        self.hint = hint


class ServerFailed(ProbeError):
    """A probe that failed; ``hint`` is the server's stderr tail (made safe)."""

    def __init__(self, message: str, *, hint: str | None) -> None:
        super().__init__(message)
        self.hint = hint


def hint_of(exc: BaseException) -> str | None:
    """The hint of a failure, when it carries one."""
    if isinstance(exc, (InstallFailed, ServerFailed)):
        return exc.hint
    return None
