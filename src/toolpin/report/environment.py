"""Say when a drift looks driven by the machine's environment, and how to fix it.

Some servers write machine facts into what the model reads: ``mcp-server-time`` puts the
local timezone into its tool descriptions, others the user name or the home directory.
Locked on one machine and checked on another, such a server "changes" although nothing
but the environment did. :func:`environment_hints` recognises that case: a changed
definition (or the instructions) whose every difference lies inside an occurrence of an
environment value in the new text, where the locked text held some other value. It
explains and points to the fix (pin the value in the server's command or env); it never
accepts anything — the verdict stays a hash comparison.

Pure: the caller passes the environment (``os.environ``, plus anything it knows of the
machine). Returned lines are safe for a terminal (:func:`toolpin.core.render.visible`);
they quote environment values and locked text, so they go to the person running toolpin,
never into an error a client or a model reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from toolpin.core.canonical import canonical_json
from toolpin.core.drift import CHANGED, Drift
from toolpin.core.render import clip, visible
from toolpin.core.seqdiff import opcodes

MIN_VALUE: Final = 3
"""Shortest environment value considered (shorter ones match anywhere)."""
MAX_VALUE: Final = 512
MAX_TEXT: Final = 1 << 20
"""Texts longer than this are not aligned (the hint is best effort, the check is not)."""
_ENV_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_NOISE: Final = frozenset({"true", "false", "yes", "no", "none", "null", "on", "off"})


@dataclass(frozen=True)
class EnvironmentMatch:
    """One difference explained by an environment value."""

    subject: str
    """What differs: ``tool get_current_time``, ``the server instructions``."""
    name: str
    """The environment variable (or machine fact) whose value the new text holds."""
    value: str
    """Its value here."""
    locked: str
    """What the locked text held in its place (the value on the locking machine)."""


def _candidates(env: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """``(name, value, value as written inside a JSON string)``, longest values first."""
    out = []
    for name, value in env.items():
        if not (MIN_VALUE <= len(value) <= MAX_VALUE) or value.strip() != value:
            continue
        if value.lower() in _NOISE or value.isdigit():
            continue
        out.append((name, value, json.dumps(value, ensure_ascii=False)[1:-1]))
    out.sort(key=lambda c: (-len(c[1]), c[0]))
    return out


def _explain(old: str, new: str, env: list[tuple[str, str, str]]) -> tuple[str, str, str] | None:
    """``(name, value, locked value)`` when every difference of ``new`` from ``old`` lies
    inside one environment value's occurrences (the same variable each time)."""
    if old == new or len(old) > MAX_TEXT or len(new) > MAX_TEXT:
        return None
    ops = opcodes(old, new)
    hunks = [op for op in ops if op[0] != "equal"]
    if not hunks:
        return None
    for name, value, written in env:
        spans = [(m.start(), m.end()) for m in re.finditer(re.escape(written), new)]
        if not spans:
            continue
        covering: set[tuple[int, int]] = set()
        for _, _, _, j1, j2 in hunks:
            span = next((s for s in spans if s[0] <= j1 and j2 <= s[1]), None)
            if span is None:
                break
            covering.add(span)
        else:
            locked = {_old_span(ops, old, span) for span in covering}
            if len(locked) == 1:
                (before,) = locked
                if before and before != written:
                    return name, value, before
    return None


def _old_span(
    ops: Sequence[tuple[str, int, int, int, int]], old: str, span: tuple[int, int]
) -> str:
    """The text of ``old`` that stands where ``new[span]`` stands (``ops``: every opcode)."""
    start, end = span
    first, last = len(old), 0
    for tag, i1, _i2, j1, j2 in ops:
        if tag == "equal" and j1 <= start < j2:
            first = i1 + start - j1
            break
        if tag != "equal" and j1 <= start <= j2:
            first = i1
            break
    for tag, i1, i2, j1, j2 in reversed(ops):
        if tag == "equal" and j1 < end <= j2:
            last = i1 + end - j1
            break
        if tag != "equal" and j1 <= end <= j2:
            last = i2
            break
    return old[first:last]


def environment_matches(drift: Drift, env: Mapping[str, str]) -> list[EnvironmentMatch]:
    """Every changed definition (and the instructions) that differs from the lock only
    where it now holds an environment value. Additions and removals are never matched."""
    candidates = _candidates(env)
    if not candidates:
        return []
    found: list[EnvironmentMatch] = []
    for change in drift.changes:
        if change.status != CHANGED or change.old is None or change.new is None:
            continue
        hit = _explain(
            canonical_json(change.old.value), canonical_json(change.new.value), candidates
        )
        if hit is not None:
            subject = f"{change.kind.value.replace('_', ' ')} {change.key}"
            found.append(EnvironmentMatch(subject, *hit))
    ins = drift.instructions
    if ins is not None and ins.old is not None and ins.new is not None:
        hit = _explain(ins.old, ins.new, candidates)
        if hit is not None:
            found.append(EnvironmentMatch("the server instructions", *hit))
    return found


def _unwritten(text: str) -> str:
    """A JSON-string fragment back to text (best effort, for display)."""
    try:
        value = json.loads(f'"{text}"')
    except ValueError:
        return text
    return value if isinstance(value, str) else text


def environment_hints(
    drift: Drift, env: Mapping[str, str], *, local_pin: str | None = None
) -> list[str]:
    """Lines for a person: which differences look environment-driven, and the fix.

    Empty when nothing does. Every change is still a change: these lines explain, they
    never accept. Lines are terminal-safe (unsafe characters made visible, long values
    clipped). The words are a team lock's (its fix is a pull request) unless
    ``local_pin`` names the server id of a pin in this machine's store, approved here."""
    matches = environment_matches(drift, env)
    if not matches:
        return []
    held, kept = ("the pin", "pinned") if local_pin else ("the lock", "locked")
    alike = "it starts alike every time" if local_pin else "every machine starts it alike"
    then = (
        "then start it again; toolpin does not accept such a change by itself (if the new "
        f"definitions are right: toolpin approve {local_pin})"
        if local_pin
        else "then lock again in a pull request; toolpin does not accept such a change by itself"
    )
    lines: list[str] = []
    pins: dict[str, str] = {}
    for match in matches:
        locked = _unwritten(match.locked)
        verb = "differ" if match.subject.endswith("instructions") else "differs"
        lines.append(
            f"{visible(clip(match.subject, 80))} {verb} from {held} only where it holds "
            f"${visible(match.name)} (here '{visible(clip(match.value, 60))}', {kept} with "
            f"'{visible(clip(locked, 60))}'): this looks driven by the machine's "
            "environment, not by a change of the server"
        )
        pins.setdefault(match.name, locked)
    env_pins = {n: v for n, v in pins.items() if _ENV_NAME.match(n)}
    if env_pins:
        shown = ", ".join(
            f'"{visible(n)}": {json.dumps(visible(clip(v, 60)), ensure_ascii=False)}'
            for n, v in sorted(env_pins.items())
        )
        lines.append(
            f"fix: pin the value in the server's entry so {alike}, "
            f'e.g. "env": {{{shown}}} (or the server\'s own option for it), {then}'
        )
    else:
        lines.append(f"fix: pin the value in the server's command or env so {alike}, {then}")
    return lines
