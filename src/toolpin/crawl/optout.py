"""The opt-out list: ``OPTOUT.txt`` in the log directory and/or the working directory.

One name per line, compared case-insensitively; ``#`` starts a comment (whole line or the
rest of a line); blank lines are ignored. A candidate is dropped after discovery and before
probing when its name, or the name of the package that starts it, is listed. Opting out
stops future observations only: entries already in the log stay (the log is append-only).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from toolpin.crawl.candidates import Candidate
from toolpin.errors import InputError
from toolpin.util.fs import read_input

OPTOUT_FILE: Final = "OPTOUT.txt"
MAX_OPTOUT_BYTES: Final = 4 << 20


def parse_optout(text: str) -> frozenset[str]:
    """The case-folded names of an opt-out file's text."""
    names: set[str] = set()
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            names.add(line.casefold())
    return frozenset(names)


def load_optout(directories: Iterable[Path]) -> frozenset[str]:
    """Every name listed in ``<dir>/OPTOUT.txt`` for each directory that has one."""
    names: set[str] = set()
    seen: set[Path] = set()
    for directory in directories:
        path = directory / OPTOUT_FILE
        try:
            key = path.resolve()
        except OSError:
            key = path
        if key in seen or not path.is_file():
            continue
        seen.add(key)
        data = read_input(path, cap=MAX_OPTOUT_BYTES)
        try:
            names |= parse_optout(data.decode("utf-8-sig"))
        except UnicodeDecodeError:
            raise InputError(f"{path} is not UTF-8 text") from None
    return frozenset(names)


def opted_out(candidate: Candidate, names: frozenset[str]) -> bool:
    """Whether the candidate's name or its package's name is on the list."""
    if candidate.name.casefold() in names:
        return True
    return candidate.package is not None and candidate.package.name.casefold() in names


def apply_optout(
    candidates: Sequence[Candidate], names: frozenset[str]
) -> tuple[list[Candidate], list[Candidate]]:
    """``(kept, dropped)``."""
    if not names:
        return list(candidates), []
    kept: list[Candidate] = []
    dropped: list[Candidate] = []
    for candidate in candidates:
        (dropped if opted_out(candidate, names) else kept).append(candidate)
    return kept, dropped
