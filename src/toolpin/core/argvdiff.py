"""What changed between two (redacted) command lines: a word diff and what kind of change.

The words are the argv's own items, compared with :func:`toolpin.core.seqdiff.opcodes`
(difflib's answer). Each changed stretch is classified:

- ``executable``: the program itself (``argv[0]``, or the first word after ``env`` and
  its assignments: a moved venv, another ``npx``);
- ``package``: the same package at another version (``pkg@1.2.3``, ``@scope/pkg@1.2.3``,
  ``pkg==1.2.3``);
- ``secret``: an argument that differs only in a redacted value (:mod:`toolpin.core.redact`);
- ``arguments``: anything else added, removed or replaced.

Everything returned is text for a terminal: each word is made visible
(:func:`toolpin.core.render.visible`) and quoted when it holds a space or is empty.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from toolpin.core.redact import MARKER_PREFIX
from toolpin.core.render import visible
from toolpin.core.seqdiff import opcodes

__all__ = [
    "ArgvChange",
    "ArgvDiff",
    "argv_diff",
    "argv_text",
    "diff_lines",
    "executable_index",
    "package_spec",
    "quote",
    "word_diff",
]

Kind = Literal["executable", "package", "secret", "arguments"]
KIND_TEXT: Final[dict[str, str]] = {
    "executable": "executable path",
    "package": "package version",
    "secret": "secret changed",
    "arguments": "arguments",
}

_SPEC = re.compile(r"(@?[A-Za-z0-9][A-Za-z0-9._\-]*(?:/[A-Za-z0-9._\-]+)?)(@|==)([^\s@=]+)\Z")
_MARKER = re.compile(re.escape(MARKER_PREFIX) + r"[0-9a-f]{8}›")


def package_spec(word: str) -> tuple[str, str] | None:
    """``(name, version)`` of ``pkg@1.2.3``, ``@scope/pkg@1.2.3`` or ``pkg==1.2.3``."""
    match = _SPEC.match(word)
    if match is None:
        return None
    return match.group(1), match.group(3)


def quote(word: str) -> str:
    """One word for display: visible, and in single quotes when it holds a space, a quote
    or nothing."""
    shown = visible(word)
    if shown == "" or any(c in shown for c in " '\"\\`$"):
        return "'" + shown.replace("'", "'\\''") + "'"
    return shown


def argv_text(argv: Sequence[str]) -> str:
    """The argv as one line for display."""
    return " ".join(quote(w) for w in argv) if argv else "(empty command)"


@dataclass(frozen=True)
class ArgvChange:
    """One changed stretch of the command line (redacted words)."""

    kind: Kind
    before: tuple[str, ...]
    after: tuple[str, ...]
    package: str | None = None
    """The package name, for ``package``."""
    context: str | None = None
    """The word before, for ``secret`` (``--api-key``); not part of the JSON."""

    def text(self) -> str:
        """``package version: srv 1.0 -> 1.1`` and the like (terminal-safe)."""
        label = KIND_TEXT[self.kind]
        if self.kind == "package" and self.package is not None:
            old = package_spec(self.before[0])
            new = package_spec(self.after[0])
            if old is not None and new is not None:
                return f"{label}: {quote(self.package)} {quote(old[1])} -> {quote(new[1])}"
        if self.kind == "secret":
            return f"{label}: {self._secret_place()} (neither value is shown)"
        if not self.before:
            return f"{label}: added {argv_text(self.after)}"
        if not self.after:
            return f"{label}: removed {argv_text(self.before)}"
        return f"{label}: {argv_text(self.before)} -> {argv_text(self.after)}"

    def _secret_place(self) -> str:
        word = self.after[0] if self.after else ""
        start = word.find(MARKER_PREFIX)
        head = word[:start].rstrip()
        if head.endswith(("=", ":")):
            return f"the value of {quote(head[:-1])}"
        if head:
            return f"a value in {quote(word)}"
        if self.context is not None:
            return f"the value after {quote(self.context)}"
        return "a redacted argument"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "before": list(self.before),
            "after": list(self.after),
        }
        if self.package is not None:
            out["package"] = self.package
        return out


@dataclass(frozen=True)
class ArgvDiff:
    """Two command lines and what changed; ``old`` is ``None`` when it was not recorded."""

    old: tuple[str, ...] | None
    new: tuple[str, ...]
    changes: tuple[ArgvChange, ...]

    @property
    def kinds(self) -> list[str]:
        """The kinds of change, each once, in order of appearance."""
        seen: list[str] = []
        for change in self.changes:
            if change.kind not in seen:
                seen.append(change.kind)
        return seen

    def to_json(self) -> dict[str, Any]:
        """Stable keys: ``before`` (``null`` when not recorded), ``after``, ``changes``."""
        return {
            "before": list(self.old) if self.old is not None else None,
            "after": list(self.new),
            "changes": [c.to_json() for c in self.changes],
        }


def word_diff(old: Sequence[str], new: Sequence[str]) -> list[tuple[str, str]]:
    """``(op, word)`` pairs, op ``=`` (kept), ``-`` (removed) or ``+`` (added), in the
    order a word diff reads (removed words before the added ones that replace them)."""
    out: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in opcodes(list(old), list(new)):
        if tag == "equal":
            out.extend(("=", w) for w in old[i1:i2])
            continue
        out.extend(("-", w) for w in old[i1:i2])
        out.extend(("+", w) for w in new[j1:j2])
    return out


def _pair_kind(before: str, after: str) -> tuple[Kind, str | None]:
    if (
        MARKER_PREFIX in before
        and MARKER_PREFIX in after
        and _MARKER.sub("‹›", before) == _MARKER.sub("‹›", after)
    ):
        return "secret", None
    old, new = package_spec(before), package_spec(after)
    if old is not None and new is not None and old[0] == new[0]:
        return "package", old[0]
    return "arguments", None


_ENV_TAKES_A_VALUE: Final = frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"})


def executable_index(argv: Sequence[str]) -> int:
    """Where the program that runs stands in ``argv``: 0, or after ``env`` and its
    options and ``NAME=value`` assignments (``env TZ=UTC /venv/bin/python ...``)."""
    if not argv or argv[0].replace("\\", "/").rsplit("/", 1)[-1] not in ("env", "env.exe"):
        return 0
    index = 1
    while index < len(argv) and (argv[index].startswith("-") or "=" in argv[index]):
        index += 2 if argv[index] in _ENV_TAKES_A_VALUE else 1
    return index if index < len(argv) else 0


def _classify(old: Sequence[str], new: Sequence[str]) -> list[ArgvChange]:
    changes: list[ArgvChange] = []
    exe_old, exe_new = executable_index(old), executable_index(new)

    def add(
        kind: Kind, before: tuple[str, ...], after: tuple[str, ...], package: str | None
    ) -> None:
        if kind == "arguments" and changes and changes[-1].kind == "arguments":
            last = changes.pop()  # neighbouring argument changes read as one
            before, after = (*last.before, *before), (*last.after, *after)
        changes.append(ArgvChange(kind, before, after, package))

    for tag, i1, i2, j1, j2 in opcodes(list(old), list(new)):
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:
            for offset in range(i2 - i1):
                b, a = old[i1 + offset], new[j1 + offset]
                if i1 + offset == exe_old and j1 + offset == exe_new:
                    add("executable", (b,), (a,), None)
                else:
                    kind, package = _pair_kind(b, a)
                    if kind == "secret":
                        before_word = new[j1 + offset - 1] if j1 + offset > 0 else None
                        changes.append(ArgvChange(kind, (b,), (a,), None, before_word))
                    else:
                        add(kind, (b,), (a,), package)
            continue
        before, after = list(old[i1:i2]), list(new[j1:j2])
        if i1 == exe_old and j1 == exe_new and before and after:
            add("executable", (before.pop(0),), (after.pop(0),), None)
        if before or after:
            add("arguments", tuple(before), tuple(after), None)
    return changes


def argv_diff(old: Sequence[str] | None, new: Sequence[str]) -> ArgvDiff:
    """The word diff of two redacted argvs, classified (``old`` ``None``: not recorded)."""
    if old is None:
        return ArgvDiff(None, tuple(new), ())
    return ArgvDiff(tuple(old), tuple(new), tuple(_classify(old, new)))


NOT_RECORDED: Final = "the earlier command was not recorded (pinned by an older toolpin)"


def diff_lines(diff: ArgvDiff) -> list[str]:
    """The change for a person: a heading, both commands, the word diff
    (``[-removed-]``, ``{+added+}``) and one line per classified change."""
    if diff.old is None:
        return [f"Command changed: {NOT_RECORDED}", f"  now:    {argv_text(diff.new)}"]
    kinds = ", ".join(KIND_TEXT[k] for k in diff.kinds) or "no visible difference"
    words = []
    for op, word in word_diff(diff.old, diff.new):
        shown = quote(word)
        words.append(shown if op == "=" else f"[-{shown}-]" if op == "-" else f"{{+{shown}+}}")
    lines = [
        f"Command changed ({kinds}):",
        f"  before: {argv_text(diff.old)}",
        f"  after:  {argv_text(diff.new)}",
        f"  diff:   {' '.join(words)}",
    ]
    lines += [f"  {change.text()}" for change in diff.changes]
    if not diff.changes:
        lines.append("  the redacted commands read the same: a value that is not shown changed")
    return lines
