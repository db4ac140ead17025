"""What one change looks like on a page: the drift between two logged versions.

The comparison, the labels and the schema findings are :func:`toolpin.core.drift.compare`
and :mod:`toolpin.report.text` (the same classes and labels as ``toolpin review``); this
module only arranges them for HTML: descriptions word by word, schemas by JSON path, each
definition as a line diff. Every string in a view has already been made visible.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from markupsafe import Markup

from toolpin.core.canonical import JSONValue
from toolpin.core.drift import ADDED, CHANGED, REMOVED, Drift, ItemChange, compare
from toolpin.core.labels import Label
from toolpin.core.render import Line, counted, pretty_diff, pretty_lines, text_diff, visible
from toolpin.core.seqdiff import opcodes
from toolpin.core.snapshot import Definition, Snapshot
from toolpin.report.text import change_details
from toolpin.site.render import escape_text

MAX_WORD_TOKENS: Final = 4000
"""Longer descriptions get a line diff instead (a word diff of them says nothing more)."""

_TOKEN: Final = re.compile(r"\s+|\w+|[^\w\s]")

_PRETTY: dict[str, list[str]] = {}
_PRETTY_KEPT: Final = 512

__all__ = [
    "ChangeSummary",
    "ChangeView",
    "ItemView",
    "LabelView",
    "change_html",
    "change_view",
    "pretty_definition",
    "word_diff",
]


LabelView = Label
"""A label as a page shows it (its key, severity and visible text): the core's own."""


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


def pretty_definition(definition: Definition) -> list[str]:
    """:func:`toolpin.core.render.pretty_lines` of a definition, kept by its hash for the
    definitions seen last (each version of a definition is the new side of one change,
    the old side of the next, and the current definitions are shown in full)."""
    lines = _PRETTY.get(definition.hash)
    if lines is None:
        if len(_PRETTY) >= _PRETTY_KEPT:
            _PRETTY.clear()
        lines = _PRETTY[definition.hash] = pretty_lines(definition.value)
    return lines


def word_diff(old: str, new: str) -> tuple[tuple[str, str], ...]:
    """A word-by-word diff of two (raw) texts; every piece made visible."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    if len(a) > MAX_WORD_TOKENS or len(b) > MAX_WORD_TOKENS:
        return ()
    out: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in opcodes(a, b):
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
    labels = change.labels
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
        diff = tuple(
            pretty_diff(
                pretty_definition(change.old), pretty_definition(change.new), name=change.key
            )
        )
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
            f"server version: {visible(identity.pinned.shown_version())} → "
            f"{visible(identity.current.shown_version())}"
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


_TAGS: Final = {"add": "ins", "del": "del"}


def change_html(change: ChangeView) -> Markup:
    """The HTML of one change (what every page that shows a change shows): the counts,
    notes, and per definition its labels, word diff, schema findings by JSON path, the
    other review lines and the definition diff. Every string is escaped here."""
    e = escape_text
    out: list[str] = []
    if change.empty:
        out.append(
            "<p>The surface digest changed but no definition differs "
            "(ordering or a listing became known).</p>\n"
        )
    rewritten, schema = change.rewritten, change.schema_only
    out.append(
        f'<p class="summary">{counted(rewritten, "description")} '
        f"rewritten,\n{counted(schema, 'schema or annotation change')} "
        f"with the description unchanged,\n{change.added} added, {change.removed} removed.</p>\n"
    )
    out.extend(f'<p class="note">{e(note)}</p>\n' for note in change.notes)
    for item in change.items:
        out.append(
            f'<div class="item {e(item.status)}">\n<h4><span class="status">{e(item.status)}'
            f'</span> <code>{e(item.name)}</code></h4>\n<ul class="labels">'
        )
        out.extend(
            f'<li class="label {e(x.severity)}" data-key="{e(x.key)}"><span class="key">'
            f"{e(x.key)}</span> {e(x.text)}</li>"
            for x in item.labels
        )
        out.append("</ul>\n")
        if item.words:
            out.append('<p class="words" tabindex="0">')
            for op, text in item.words:
                tag = _TAGS.get(op, "span")
                out.append(f"<{tag}>{e(text)}</{tag}>")
            out.append("</p>\n")
        if item.findings:
            out.append(
                '<div class="table-scroll" tabindex="0">'
                '<table class="findings"><caption>Schema changes by JSON path</caption>\n'
                '<thead><tr><th scope="col">Class</th><th scope="col">Path</th>'
                '<th scope="col">Change</th></tr></thead>\n<tbody>'
            )
            out.extend(
                f"<tr><td>{e(cls)}</td><td><code>{e(pointer)}</code></td><td>{e(line)}</td></tr>"
                for cls, pointer, line in item.findings
            )
            out.append("</tbody></table></div>\n")
        shown = {line for _, _, line in item.findings}
        extra = [d for d in item.details if d not in shown]
        if extra:
            out.append('<ul class="details">')
            out.extend(f"<li>{e(d)}</li>" for d in extra)
            out.append("</ul>\n")
        if item.diff:
            out.append(
                '<details><summary>Definition diff</summary>\n<pre class="diff" tabindex="0">'
            )
            out.extend(_lines(item.diff))
            out.append("</pre></details>\n")
        out.append("</div>\n")
    if change.instructions:
        out.append(
            '<div class="item changed"><h4><span class="status">changed</span> server '
            'instructions</h4>\n<pre class="diff" tabindex="0">'
        )
        out.extend(_lines(change.instructions))
        out.append("</pre></div>\n")
    return Markup("".join(out))


def _lines(lines: tuple[Line, ...]) -> list[str]:
    e = escape_text
    return [f'<span class="{e(x.style or "ctx")}">{e(x.text)}</span>\n' for x in lines]
