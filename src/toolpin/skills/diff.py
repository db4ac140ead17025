"""A skill's change explained with the tool label engine, and the review's diff.

The labels are :mod:`toolpin.core.labels`' own: the text signals (new instruction,
secrets, links, hidden characters) run over the canonical JSON of the skill's texts
(``SKILL.md``'s frontmatter and body, and every other text file), counting matches
before and after exactly as for a tool definition; file facts add structural labels
(a new file, a removed file, a changed binary file or link, a changed frontmatter key,
``allowed-tools`` above all); a change with none of these is "wording only". Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from toolpin.core.canonical import JSONValue, canonical_json
from toolpin.core.labels import (
    HIGH,
    LOW,
    MEDIUM,
    Label,
    changed_labels,
    naming_label,
    sort_labels,
    text_signals,
)
from toolpin.core.render import Line, definition_diff, text_diff, visible, wrapped
from toolpin.skills.tree import SKILL_FILE, SkillFile

NEW_SKILL: Final = Label("new-skill", HIGH, "New skill")
_PERMISSIONS: Final = frozenset({"allowed-tools", "allowed_tools", "allowedTools"})
_WORDING_KEYS: Final = frozenset({"description"})


@dataclass(frozen=True)
class SkillSide:
    """One side of a comparison: the files, texts and ``SKILL.md`` data of a skill."""

    files: Sequence[SkillFile]
    texts: Mapping[str, str]
    document: Mapping[str, JSONValue]


@dataclass(frozen=True)
class FileChange:
    """One file that differs: ``status`` is ``added``, ``removed`` or ``changed``."""

    path: str
    status: str
    old: SkillFile | None
    new: SkillFile | None


def _signal_text(side: SkillSide | None) -> str:
    if side is None:
        return ""
    others: dict[str, JSONValue] = {p: t for p, t in side.texts.items() if p != SKILL_FILE}
    return canonical_json({"skill": dict(side.document), "files": others})


def file_changes(old: SkillSide | None, new: SkillSide) -> list[FileChange]:
    """The files that differ, by path."""
    before = {f.path: f for f in (old.files if old else ())}
    after = {f.path: f for f in new.files}
    out = []
    for path in sorted(set(before) | set(after), key=lambda p: p.encode("utf-8")):
        a, b = before.get(path), after.get(path)
        if a is None:
            out.append(FileChange(path, "added", None, b))
        elif b is None:
            out.append(FileChange(path, "removed", a, None))
        elif (a.type, a.sha256) != (b.type, b.sha256):
            out.append(FileChange(path, "changed", a, b))
    return out


def _frontmatter_keys(old: JSONValue, new: JSONValue) -> list[str]:
    a = old if isinstance(old, dict) else {}
    b = new if isinstance(new, dict) else {}
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def labels(old: SkillSide | None, new: SkillSide) -> tuple[Label, ...]:
    """The labels of a skill first seen (``old`` None) or changed."""
    if old is None:
        return sort_labels([NEW_SKILL, *text_signals("", _signal_text(new))])
    changes = file_changes(old, new)
    added = [c.path for c in changes if c.status == "added"]
    removed = [c.path for c in changes if c.status == "removed"]
    binary = [
        c.path
        for c in changes
        if c.new is not None and c.new.type == "binary" and c.status == "changed"
    ]
    links = [
        c.path
        for c in changes
        if "link" in (c.old.type if c.old else "", c.new.type if c.new else "")
    ]
    structural = naming_label("new-file", HIGH, "New file", added)
    keys = _frontmatter_keys(old.document.get("frontmatter"), new.document.get("frontmatter"))
    if any(k in _PERMISSIONS for k in keys):
        structural.append(Label("allowed-tools", HIGH, "Allowed tools changed"))
    other = [k for k in keys if k not in _PERMISSIONS and k not in _WORDING_KEYS]
    structural += [
        *naming_label("frontmatter", MEDIUM, "Frontmatter changed", other),
        *naming_label("binary", MEDIUM, "Binary file changed (digest only)", binary),
        *naming_label("symlink", MEDIUM, "Link changed", links),
        *naming_label("file-removed", LOW, "File removed", removed),
    ]
    return changed_labels(_signal_text(old), _signal_text(new), structural)


def label_lines(found: Sequence[Label]) -> list[Line]:
    """``  [high] New instruction to the model``, one line per label."""
    return [Line(f"  [{lab.severity}] {lab.text}", lab.severity) for lab in found]


def diff_lines(name: str, old: SkillSide | None, new: SkillSide) -> list[Line]:
    """The full diff: ``SKILL.md``'s frontmatter and body, then every other changed file.
    Every line is made visible (hidden characters as ``\\u{hex}``) and wrapped."""
    label = visible(name)
    out: list[Line] = []
    empty = SkillSide((), {}, {"frontmatter": None, "body": ""})
    before = old or empty
    fm_old, fm_new = before.document.get("frontmatter"), new.document.get("frontmatter")
    if fm_old != fm_new:
        out.append(Line(f"~ {SKILL_FILE} frontmatter", "hunk"))
        out += definition_diff(fm_old, fm_new, name=f"{label}/{SKILL_FILE} frontmatter")
    body_old, body_new = before.document.get("body"), new.document.get("body")
    if body_old != body_new:
        out.append(Line(f"~ {SKILL_FILE} body", "hunk"))
        out += text_diff(str(body_old or ""), str(body_new or ""), name=f"{label}/{SKILL_FILE}")
    for change in file_changes(old, new):
        if change.path == SKILL_FILE:
            continue
        out += _file_lines(label, change, before, new)
    return wrapped(out, indent="  ")


def _file_lines(label: str, change: FileChange, old: SkillSide, new: SkillSide) -> list[Line]:
    path = visible(change.path)
    a, b = change.old, change.new
    if (b is not None and b.type == "link") or (a is not None and a.type == "link"):
        was = visible(a.target or "") if a and a.target is not None else "(none)"
        now = visible(b.target or "") if b and b.target is not None else "(none)"
        return [Line(f"~ {path}: link, {was} to {now}", "hunk")]
    if (a is None or a.type == "binary") and (b is None or b.type == "binary"):
        was = a.sha256[:12] if a else "(none)"
        now = b.sha256[:12] if b else "(removed)"
        return [Line(f"~ {path}: binary file, digest only: {was} to {now}", "hunk")]
    what = {"added": "new file", "removed": "removed", "changed": "changed"}[change.status]
    head = Line(f"~ {path} ({what})", "hunk")
    return [
        head,
        *text_diff(
            old.texts.get(change.path, ""), new.texts.get(change.path, ""), name=f"{label}/{path}"
        ),
    ]
