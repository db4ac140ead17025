"""What ``toolpin skills`` prints: styled lines and the ``--json`` form. Pure.

Skill names are made visible; the one-line summary holds names, counts and commands
only, never a word of a skill's text. The review's diff shows the text, every hidden
character written as ``\\u{hex}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from toolpin.core.render import Line, counted, visible
from toolpin.skills.check import SkillOutcome, side
from toolpin.skills.diff import diff_lines, label_lines

MAX_NAMES: Final = 8
_WORD: Final = {
    "match": "ok",
    "changed": "changed",
    "new": "new",
    "pinned": "pinned",
    "approved": "approved",
}


def _files(outcome: SkillOutcome) -> str:
    binary = sum(1 for f in outcome.tree.files if f.type == "binary")
    text = counted(len(outcome.tree.files), "file")
    return f"{text}, {binary} binary (digest only)" if binary else text


def status_lines(outcomes: Sequence[SkillOutcome]) -> list[Line]:
    """One line per skill: its status, name, tree digest and file count."""
    width = max((len(visible(o.ref.name)) for o in outcomes), default=0)
    out = []
    for o in outcomes:
        style = "bad" if not o.ok else ("good" if o.status in ("pinned", "approved") else None)
        name = visible(o.ref.name).ljust(width)
        out.append(Line(f"{_WORD[o.status]:<8} {name}  {o.tree.digest[:12]}  {_files(o)}", style))
    return out


def summary(outcomes: Sequence[SkillOutcome]) -> str:
    """The one-line verdict: counts and names, no skill text."""
    if not outcomes:
        return "no skills found"
    waiting = [o for o in outcomes if not o.ok]
    if not waiting:
        return f"{counted(len(outcomes), 'skill')}, every one as pinned"
    names = ", ".join(f"{visible(o.ref.name)} ({o.status})" for o in waiting[:MAX_NAMES])
    more = f", and {len(waiting) - MAX_NAMES} more" if len(waiting) > MAX_NAMES else ""
    verb = "differs" if len(waiting) == 1 else "differ"
    return (
        f"{len(waiting)} of {counted(len(outcomes), 'skill')} {verb} from the pins: {names}{more}. "
        "Review with: toolpin skills review"
    )


def review_lines(outcomes: Sequence[SkillOutcome]) -> list[Line]:
    """Every new or changed skill: labels, the full diff, then how to accept it."""
    waiting = [o for o in outcomes if not o.ok]
    if not waiting:
        return [Line(summary(outcomes))]
    out: list[Line] = []
    for o in waiting:
        name = visible(o.ref.name)
        what = "new: no pin yet" if o.pin is None else "changed since it was pinned"
        out.append(Line(f"{name}  ({what})", "header"))
        if o.pin is not None:
            out.append(Line(f"pinned    {visible(o.pin.pinned_at)}  {o.pin.tree.digest[:12]}"))
        out.append(Line(f"observed  {o.tree.digest[:12]}  {_files(o)}"))
        out.append(Line(""))
        out += label_lines(o.labels)
        out.append(Line(""))
        out += diff_lines(o.ref.name, None if o.pin is None else side(o.pin.tree), side(o.tree))
        out.append(Line(""))
        target = _shell_word(o.ref.name)
        out.append(
            Line(
                f"If you accept it:  toolpin skills approve {target} --expect {o.tree.digest[:16]}"
            )
        )
        out.append(Line(""))
    out.append(Line("Otherwise, do nothing: the pins stand and check keeps failing."))
    return out


def _shell_word(name: str) -> str:
    import shlex

    return visible(shlex.quote(name))


def check_json(outcomes: Sequence[SkillOutcome]) -> dict[str, Any]:
    """``skills check --json``: stable keys, documented in docs/skills.md."""
    return {
        "ok": all(o.ok for o in outcomes),
        "skills": [
            {
                "name": o.ref.name,
                "path": o.ref.path,
                "status": o.status,
                "ok": o.ok,
                "treeDigest": o.tree.digest,
                "pinnedDigest": o.pin.tree.digest if o.pin is not None else None,
                "labels": [lab.key for lab in o.labels],
                "files": len(o.tree.files),
            }
            for o in outcomes
        ],
    }


def lock_lines(outcomes: Sequence[SkillOutcome], gone: Sequence[str], *, full: bool) -> list[Line]:
    """The skills part of ``toolpin lock`` (``full``: ``lock --check``, with each
    change's labels and diff)."""
    words = {
        "pinned": "locked",
        "match": "matches the lock",
        "changed": "changed since it was locked",
        "new": "not in the lock",
    }
    out: list[Line] = []
    for o in outcomes:
        style = "bad" if not o.ok else None
        out.append(Line(f"{visible(o.ref.name)}: {words.get(o.status, o.status)}", style))
        if full and not o.ok:
            out += label_lines(o.labels)
            out += diff_lines(o.ref.name, None if o.pin is None else side(o.pin.tree), side(o.tree))
    out += [
        Line(f"skills/{visible(name)}: in the lock but no longer in the folder", "bad")
        for name in gone
    ]
    return out


def lock_json(outcomes: Sequence[SkillOutcome], gone: Sequence[str]) -> list[dict[str, Any]]:
    """The ``skills`` list of ``lock --check --json``."""
    out: list[dict[str, Any]] = [
        {
            "name": o.ref.name,
            "status": o.status,
            "ok": o.ok,
            "changes": [lab.key for lab in o.labels],
            "diff": [
                line.text
                for line in diff_lines(
                    o.ref.name, None if o.pin is None else side(o.pin.tree), side(o.tree)
                )
            ]
            if not o.ok
            else [],
        }
        for o in outcomes
    ]
    out += [
        {"name": f"skills/{n}", "status": "gone", "ok": False, "changes": [], "diff": []}
        for n in gone
    ]
    return out
