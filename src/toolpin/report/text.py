"""The labelled summary and the full diff of a :class:`~toolpin.core.drift.Drift`.

Shared by every place a person reviews a change: the proxy's block report on stderr,
``toolpin review``, ``toolpin check`` and ``toolpin lock --check``. Every server string is
made visible first. Pure core: returns styled lines, prints nothing.
"""

from __future__ import annotations

from toolpin.core.drift import ADDED, CHANGED, REMOVED, Drift, ItemChange
from toolpin.core.render import Line, clip, definition_diff, pretty_lines, text_diff, visible
from toolpin.core.render import wrapped as _wrapped
from toolpin.core.snapshot import Kind

_NAME_WIDTH = 28


def summary(drift: Drift, *, indent: str = "  ") -> list[Line]:
    """``What changed``: one line per changed item with its labels, most severe first."""
    items = drift.summary_items()
    if not items:
        return []
    names = [clip(visible(name), _NAME_WIDTH) for name, _ in items]
    width = min(_NAME_WIDTH, max(len(n) for n in names))
    out = [Line(f"{indent}What changed", "header")]
    for name, (_, labels) in zip(names, items, strict=True):
        text = "; ".join(label.text for label in labels)
        style = labels[0].severity if labels else "low"
        out.append(Line(f"{indent}  {name.ljust(width)}  {text}", style))
    return out


def _item_diff(change: ItemChange) -> list[Line]:
    kind_prefix = "" if change.kind is Kind.TOOL else f"{change.kind.value}:"
    name = visible(change.key)
    if change.status == ADDED:
        return added_lines(change)
    if change.status == REMOVED:
        return [Line(f"- {change.kind.value.replace('_', ' ')} removed: {name}", "del")]
    assert change.old is not None and change.new is not None
    lines = definition_diff(change.old.value, change.new.value, name=kind_prefix + change.key)
    details = change_details(change)
    if details:
        lines.extend(Line(f"  {text}", style) for text, style in details)
    return lines


def added_lines(change: ItemChange) -> list[Line]:
    """An added definition in full: its labels, then its pretty canonical JSON.

    This is exactly what the server now sends the model for that item, every line made
    visible and wrapped, never cut, so approving it approves text a person was shown.
    """
    assert change.new is not None
    what = change.kind.value.replace("_", " ")
    lines = [Line(f"+ {what} added: {visible(change.key)}", "add")]
    extra = [label.text for label in change.labels[1:]]
    if extra:
        lines.append(Line(f"  labels: {'; '.join(extra)}", change.level))
    lines.extend(Line(f"  + {text}", "add") for text in pretty_lines(change.new.value))
    return lines


def change_details(change: ItemChange, *, headed: bool = False) -> list[tuple[str, str | None]]:
    """Schema findings and member changes of a changed item, as (text, style) pairs.

    With ``headed`` the input and output findings each follow a ``schema:`` /
    ``output schema:`` heading (``toolpin check``'s layout).
    """
    from toolpin.core.schemadiff import finding_line  # a changed tool only

    out: list[tuple[str, str | None]] = []
    if headed and change.input_findings:
        out.append(("schema:", None))
    out.extend(
        (visible(finding_line(finding)), "medium" if finding.widened else None)
        for finding in change.input_findings
    )
    if headed and (change.output_event or change.output_findings):
        out.append(("output schema:", None))
    if change.output_event == ADDED:
        out.append(("output changed: outputSchema added (not present in the pin)", None))
    elif change.output_event == REMOVED:
        out.append(("output changed: outputSchema removed", None))
    for finding in change.output_findings:
        line = finding_line(finding, direction="output")
        out.append((visible(line), "medium" if finding.widened else None))
    if change.annotations_changed:
        out.append(("annotations changed", None))
    for member in change.members:
        detail = f": {member.detail}" if member.detail else ""
        out.append((f"{visible(member.member)} {member.change}{detail}", None))
    return out


def full_diff(drift: Drift) -> list[Line]:
    """Every change in full: definition diffs, instruction diffs, additions and removals."""
    out: list[Line] = []
    for change in drift.changes:
        if change.status == CHANGED:
            out.extend(_item_diff(change))
    if drift.instructions is not None:
        out.extend(
            text_diff(
                drift.instructions.old or "",
                drift.instructions.new or "",
                name="server-instructions",
            )
        )
        if drift.instructions.old is None:
            out.append(Line("  (the pin had no instructions)", "dim"))
        if drift.instructions.new is None:
            out.append(Line("  (the server now has no instructions)", "dim"))
    for change in drift.changes:
        if change.status != CHANGED:
            out.extend(_item_diff(change))
    out = _wrapped(out, indent="    ")
    identity = drift.identity
    if identity.name_changed and identity.pinned and identity.current:
        out.append(
            Line(
                f"server name changed: {visible(identity.pinned.name)} -> "
                f"{visible(identity.current.name)}",
                "del",
            )
        )
    return out


def review_lines(drift: Drift) -> list[Line]:
    """The summary, a blank line, then the full diff."""
    lines = summary(drift)
    diff = full_diff(drift)
    if lines and diff:
        lines.append(Line(""))
    return lines + diff
