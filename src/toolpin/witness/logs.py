"""The logs a witness knows: a file of ``log <vkey> [url]`` lines (the ``log`` lines of a
tlog-policy file).

A log is known by its origin, which is its key's name (toolpin names a log's key after
its origin); one origin may have several keys (a rotation). ``witness``, ``group`` and
``quorum`` lines are a verifier's business and are skipped, so one policy file can serve
both; any other line is refused, as is a file without a ``log`` line. ``#`` starts a
comment line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from toolpin.errors import InputError, LogError
from toolpin.publog.note import Verifier
from toolpin.util.fs import read_input

MAX_LOGS_BYTES = 1 << 20
VERIFIER_KEYWORDS = frozenset({"witness", "group", "quorum"})

__all__ = ["KnownLogs", "load_known_logs", "parse_known_logs"]


@dataclass(frozen=True)
class KnownLogs:
    """Origin -> the log keys trusted for it."""

    keys: Mapping[str, tuple[Verifier, ...]]

    def verifiers(self, origin: str) -> tuple[Verifier, ...]:
        return self.keys.get(origin, ())


def parse_known_logs(text: str, *, source: str = "the logs file") -> KnownLogs:
    keys: dict[str, list[Verifier]] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = line.split()
        if words[0] in VERIFIER_KEYWORDS:
            continue
        if words[0] != "log" or len(words) not in (2, 3):
            raise InputError(f"{source}, line {number}: expected `log <vkey> [url]`")
        try:
            verifier = Verifier.from_text(words[1])
        except LogError as exc:
            raise InputError(f"{source}, line {number}: {exc.message}") from None
        listed = keys.setdefault(verifier.name, [])
        if verifier not in listed:
            listed.append(verifier)
    if not keys:
        raise InputError(f"{source} names no log (`log <vkey> [url]` lines)")
    return KnownLogs({origin: tuple(found) for origin, found in keys.items()})


def load_known_logs(path: str | Path) -> KnownLogs:
    data = read_input(path, what=f"the logs file {path}", cap=MAX_LOGS_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"the logs file {path} is not UTF-8 text") from None
    return parse_known_logs(text, source=f"the logs file {path}")
