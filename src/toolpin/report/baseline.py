"""What ``toolpin snapshot --check`` says about a server compared with its baseline.

A server's maintainer reviews a pull request; the change easiest to miss there is a
schema that moved while the description a reviewer reads stayed the same (a new
``context`` field, a widened type). Such changes are shown first, called out as such,
then the labelled summary and full diff of everything else (:mod:`toolpin.report.text`).
Pure: returns styled lines and JSON-ready values, prints nothing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from toolpin.core.drift import CHANGED, Drift, IdentityReport, ItemChange, change_keys
from toolpin.core.render import Line, visible
from toolpin.report.text import full_diff, review_lines

SCHEMA_ONLY_HEADING: Final = "Schema changed, description untouched (the change easiest to miss)"


def schema_only(change: ItemChange) -> bool:
    """A changed definition whose input or output schema differs while its description
    text is the same."""
    return (
        change.status == CHANGED
        and not change.description_changed
        and bool(change.input_findings or change.output_findings or change.output_event)
    )


def split(drift: Drift) -> tuple[Drift, Drift]:
    """(the schema-only changes, everything else), each as a drift of its own; the first
    holds no instructions or identity change (those are in the second)."""
    first = tuple(c for c in drift.changes if schema_only(c))
    rest = tuple(c for c in drift.changes if not schema_only(c))
    quiet = IdentityReport(pinned=None, current=None)
    return replace(drift, changes=first, instructions=None, identity=quiet), replace(
        drift, changes=rest
    )


def schema_only_lines(drift: Drift) -> list[Line]:
    """The schema-only changes with their labels and diffs ([] when there are none)."""
    first, _ = split(drift)
    if not first.changes:
        return []
    out = [Line(f"  {SCHEMA_ONLY_HEADING}", "header")]
    for change in first.changes:
        labels = "; ".join(label.text for label in change.labels)
        out.append(Line(f"    {visible(change.display_name)}  {labels}", change.level))
    out.append(Line(""))
    out.extend(full_diff(first))
    return out


def check_lines(name: str, baseline: str, drift: Drift, *, accept: str) -> list[Line]:
    """The whole report of ``snapshot --check``: the verdict, the schema-only changes
    first, then the labelled summary and diff of the rest, then how to accept it."""
    shown = f"{visible(name)}: "
    if drift.ok:
        return [Line(f"{shown}matches {visible(baseline)}", "good")]
    lines = [Line(f"{shown}differs from {visible(baseline)}", "bad")]
    first = schema_only_lines(drift)
    _, rest = split(drift)
    others = review_lines(rest)
    lines.extend(first)
    if first and others:
        lines.append(Line(""))
    lines.extend(others)
    lines += [
        Line(""),
        Line(f"If the change is intended, run `{visible(accept)}` and commit {visible(baseline)}."),
    ]
    return lines


def check_json(name: str, baseline: str, drift: Drift) -> dict[str, Any]:
    """``snapshot --check --json`` (keys documented in docs/server-authors.md).

    Strings are as they are; print it with :func:`toolpin.core.render.safe_json`."""
    first, rest = split(drift)
    return {
        "ok": drift.ok,
        "status": "match" if drift.ok else "changed",
        "name": name,
        "baseline": baseline,
        "schemaOnly": [c.display_name for c in first.changes],
        "changes": change_keys(drift),
        "diff": [line.text for line in schema_only_lines(drift) + review_lines(rest)],
    }
