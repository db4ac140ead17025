"""What one change looks like on a page: the drift between two logged versions.

The comparison, the labels and the schema findings are :func:`toolpin.core.drift.compare`
and :mod:`toolpin.report.text` (the same classes and labels as ``toolpin review``); this
module only arranges them for HTML: descriptions word by word, schemas by JSON path, each
definition as a line diff. Every string in a view has already been made visible.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Final

from toolpin.core.canonical import JSONValue
from toolpin.core.drift import ADDED, CHANGED, REMOVED, Drift, ItemChange, compare
from toolpin.core.render import Line, definition_diff, text_diff, visible
from toolpin.core.snapshot import Snapshot
from toolpin.report.text import change_details

MAX_WORD_TOKENS: Final = 4000
"""Longer descriptions get a line diff instead (a word diff of them says nothing more)."""

_TOKEN: Final = re.compile(r"\s+|\w+|[^\w\s]")

__all__ = ["ChangeSummary", "ChangeView", "ItemView", "LabelView", "change_view", "word_diff"]


@dataclass(frozen=True, slots=True)
class LabelView:
    key: str
    severity: str
    text: str


@dataclass(frozen=True, slots=True)
class ItemView:
    """One added, removed or changed definition."""

    name: str
    status: str
    level: str
    labels: tuple[LabelView, ...]
    words: tuple[tuple[str, str], ...]
    """The description word diff: ``(op, text)`` with op ``same``, ``del`` or ``add``."""
    findings: tuple[tuple[str, str, str], ...]
    """``(class, JSON pointer, line)`` per schema finding."""
    details: tuple[str, ...]
    """Every detail line ``toolpin review`` prints for the item."""
    diff: tuple[Line, ...]


@dataclass(frozen=True, slots=True)
class ChangeSummary:
    """What feeds, the API and the index need of a change: label keys and counts."""

    label_keys: tuple[str, ...]
    rewritten: int
    schema_only: int
    added: int
    removed: int


@dataclass(frozen=True, slots=True)
class ChangeView:
    """Everything that differs between two versions."""

    items: tuple[ItemView, ...]
    instructions: tuple[Line, ...]
    notes: tuple[str, ...]
    label_keys: tuple[str, ...]
    rewritten: int
    schema_only: int
    added: int
    removed: int

    @property
    def empty(self) -> bool:
        return not self.items and not self.instructions and not self.notes

    def summary(self) -> ChangeSummary:
        return ChangeSummary(
            self.label_keys, self.rewritten, self.schema_only, self.added, self.removed
        )


def word_diff(old: str, new: str) -> tuple[tuple[str, str], ...]:
    """A word-by-word diff of two (raw) texts; every piece made visible."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    if len(a) > MAX_WORD_TOKENS or len(b) > MAX_WORD_TOKENS:
        return ()
    out: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.append(("same", visible("".join(a[i1:i2]), multiline=True)))
            continue
        if i2 > i1:
            out.append(("del", visible("".join(a[i1:i2]), multiline=True)))
        if j2 > j1:
            out.append(("add", visible("".join(b[j1:j2]), multiline=True)))
    return tuple(out)


def _description(value: JSONValue) -> str:
    return value if isinstance(value, str) else ""


def _item(change: ItemChange) -> ItemView:
    labels = tuple(LabelView(x.key, x.severity, x.text) for x in change.labels)
    words: tuple[tuple[str, str], ...] = ()
    findings: tuple[tuple[str, str, str], ...] = ()
    details: tuple[str, ...] = ()
    diff: tuple[Line, ...] = ()
    if change.status == CHANGED and change.old is not None and change.new is not None:
        if change.description_changed:
            words = word_diff(
                _description(change.old.value.get("description")),
                _description(change.new.value.get("description")),
            )
        from toolpin.core.schemadiff import finding_line

        findings = tuple(
            (f.cls, visible(f.pointer or "/"), visible(finding_line(f)))
            for f in change.input_findings
        ) + tuple(
            (f.cls, visible(f.pointer or "/"), visible(finding_line(f, direction="output")))
            for f in change.output_findings
        )
        details = tuple(text for text, _ in change_details(change))
        diff = tuple(definition_diff(change.old.value, change.new.value, name=change.key))
    return ItemView(
        name=visible(change.display_name),
        status=change.status,
        level=change.level,
        labels=labels,
        words=words,
        findings=findings,
        details=details,
        diff=diff,
    )


def change_view(old: Snapshot, new: Snapshot) -> ChangeView:
    """The view of what changed from ``old`` to ``new``."""
    return view_of(compare(old, new))


def view_of(drift: Drift) -> ChangeView:
    items = tuple(_item(c) for c in drift.changes)
    instructions: tuple[Line, ...] = ()
    keys: list[str] = []
    for change in drift.changes:
        keys.extend(change.label_keys)
    if drift.instructions is not None:
        instructions = tuple(
            text_diff(
                drift.instructions.old or "", drift.instructions.new or "", name="instructions"
            )
        )
        keys.extend(x.key for x in drift.instructions.labels)
    notes: list[str] = []
    identity = drift.identity
    if identity.name_changed and identity.pinned and identity.current:
        notes.append(
            f"server name changed: {visible(identity.pinned.name)} → "
            f"{visible(identity.current.name)}"
        )
        keys.append("server-name")
    if identity.version_changed and identity.pinned and identity.current:
        notes.append(
            f"server version: {visible(identity.pinned.version)} → "
            f"{visible(identity.current.version)}"
        )
    notes.extend(f"not compared: {visible(x)}" for x in drift.not_checked)
    changed = [c for c in drift.changes if c.status == CHANGED]
    return ChangeView(
        items=items,
        instructions=instructions,
        notes=tuple(notes),
        label_keys=tuple(dict.fromkeys(keys)),
        rewritten=sum(1 for c in changed if c.description_changed),
        schema_only=sum(1 for c in changed if not c.description_changed),
        added=sum(1 for c in drift.changes if c.status == ADDED),
        removed=sum(1 for c in drift.changes if c.status == REMOVED),
    )
