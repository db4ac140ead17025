"""What ``toolpin pin``, ``check`` and ``hash`` print, as styled lines or JSON-ready values.

Text and ``--json`` output follow mcp-tool-pin-check 0.2.2 line for line where that tool
has the finding, and add toolpin's own (whole-definition members, prompts, resources,
templates, instructions, labels) after it. Pure: builds values, prints nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolpin.core.drift import ADDED, CHANGED, REMOVED, Drift, ItemChange
from toolpin.core.render import Line, counted, text_diff, visible
from toolpin.core.snapshot import Identity, Kind
from toolpin.report.text import change_details

if TYPE_CHECKING:
    from toolpin.core.schemadiff import SchemaFinding
    from toolpin.offline.check import CheckResult, PinResult
    from toolpin.offline.hash import HashReport

PARTIAL_WARNING = (
    "toolpin: warning: the listing ends with a nextCursor, so pages are missing; "
    "pass every page with --listing"
)


# ------------------------------------------------------------------------------------- pin


def pin_text(result: PinResult, lock: str) -> list[Line]:
    """``toolpin pin``: what was pinned, one line per tool."""
    snap = result.entry.snapshot
    tools = snap.tools.items if snap.tools is not None else ()
    lines = [
        Line(f"Pinned {counted(len(tools), 'tool')} to {visible(lock)}"),
        Line(f"source: {visible(result.entry.source or '')}"),
        Line(f"pinned_at: {visible(result.entry.pinned_at or '')}"),
    ]
    if snap.identity is not None:
        lines.append(Line(f"server: {visible(snap.identity.label())}"))
    lines.extend(Line(f"  {visible(d.key)} {d.hash}") for d in tools)
    extras = [f"{len(x)} {x.kind.plural}" for x in snap.listings() if x.kind is not Kind.TOOL]
    if snap.instructions_known:
        extras.append("instructions" if snap.instructions is not None else "no instructions")
    if extras:
        lines.append(Line("also pinned: " + ", ".join(extras)))
    return lines


def pin_json(result: PinResult, lock: str) -> dict[str, Any]:
    """``toolpin pin --json``."""
    snap = result.entry.snapshot
    tools = snap.tools.items if snap.tools is not None else ()
    out: dict[str, Any] = {
        "lock": lock,
        "pinned_at": result.entry.pinned_at,
        "source": result.entry.source,
        "tool_count": len(tools),
        "tools": [{"name": d.key, "sha256": d.hash} for d in tools],
        "entry": result.entry_name,
        "surface_hash": snap.surface_hash(),
        "set_hash": snap.tools.set_hash if snap.tools is not None else None,
        "counts": snap.counts(),
        "instructions_hash": snap.instructions_hash,
        "partial": result.partial,
    }
    if snap.identity is not None:
        out["server"] = snap.identity.to_json()
    return out


# ----------------------------------------------------------------------------------- check


def _identity_label(identity: Identity | None) -> str:
    return visible(identity.label()) if identity is not None else "(none)"


def identity_lines(drift: Drift) -> list[str]:
    """The server identity part of ``check``: added, removed, renamed, new version."""
    ident = drift.identity
    out = []
    if ident.pinned is None:
        out.append("note: identity was not pinned")
        if ident.current is not None:
            out.append(f"identity added: {_identity_label(ident.current)}")
        return out
    if ident.current is None:
        out.append(f"identity removed: {_identity_label(ident.pinned)}")
        return out
    if ident.name_changed:
        out.append(
            f"server name changed: {visible(ident.pinned.name)} -> {visible(ident.current.name)}"
        )
    if ident.version_changed:
        old_version = visible(ident.pinned.shown_version())
        new_version = visible(ident.current.shown_version())
        out.append(f"server version changed: {old_version} -> {new_version}")
    if ident.protocol_changed:
        old = ident.pinned.protocol_version or "(none)"
        new = ident.current.protocol_version or "(none)"
        out.append(f"protocol version changed: {visible(old)} -> {visible(new)}")
    if not out:
        out.append(f"unchanged: {_identity_label(ident.pinned)}")
    return out


def _labels_line(change: ItemChange) -> Line:
    return Line("    labels: " + "; ".join(x.text for x in change.labels), change.level)


def _description_lines(change: ItemChange, *, styled: bool) -> list[Line]:
    if not change.description_diff:
        return []
    lines = [Line("    description:")]
    for text in change.description_diff:
        style = None
        if styled:
            style = "add" if text.startswith("+") else "del" if text.startswith("-") else None
        lines.append(Line(f"    {visible(text)}", style))
    return lines


def _changed_lines(change: ItemChange) -> list[Line]:
    tool = change.kind is Kind.TOOL
    lines = [Line(f"  ~ {visible(change.key)}", change.level)]
    lines += _description_lines(change, styled=tool)
    lines.extend(Line(f"    {text}", style) for text, style in change_details(change, headed=True))
    if change.widened:
        lines.append(Line("    schema widened: yes", "medium"))
    lines.append(_labels_line(change))
    return lines


def _section(title: str, names: list[str], sign: str, style: str | None) -> list[Line]:
    lines = [Line(f"{title} ({len(names)}):")]
    if not names:
        lines.append(Line("  (none)"))
    lines.extend(Line(f"  {sign} {visible(n)}", style) for n in names)
    return lines


def check_text(result: CheckResult) -> list[Line]:
    """``toolpin check``: the mcp-tool-pin-check report, then toolpin's additions."""
    drift = result.drift

    def text(value: object) -> str:
        return "(none)" if value is None else visible(str(value))

    lines = [
        Line("MCP tool pin check", "header"),
        Line(f"lock source: {text(result.source)}"),
        Line(f"pinned_at: {text(result.pinned_at)}"),
        Line("result: unchanged", "good") if result.ok else Line("result: drift", "bad"),
        Line(""),
        Line("server identity:"),
    ]
    ident_style = "high" if drift.identity.name_changed else None
    lines.extend(
        Line(f"  {x}", ident_style if "name changed" in x else None) for x in identity_lines(drift)
    )
    lines.append(Line(""))
    for kind in drift.compared:
        prefix = "" if kind is Kind.TOOL else f"{kind.plural} "
        added = [c.key for c in drift.of_kind(kind, ADDED)]
        removed = [c.key for c in drift.of_kind(kind, REMOVED)]
        changed = drift.of_kind(kind, CHANGED)
        lines += _section(f"{prefix}added", added, "+", "add")
        lines += _section(f"{prefix}removed", removed, "-", "del")
        lines.append(Line(f"{prefix}changed ({len(changed)}):"))
        if not changed:
            lines.append(Line("  (none)"))
        for index, change in enumerate(changed):
            if index:
                lines.append(Line(""))
            lines.extend(_changed_lines(change))
        same = drift.unchanged.get(kind, ())
        shown = ", ".join(visible(n) for n in same) if same else "(none)"
        lines.append(Line(f"{prefix}unchanged ({len(same)}): {shown}"))
    for change in drift.changes:
        if change.status != CHANGED and len(change.labels) > 1:
            extra = "; ".join(x.text for x in change.labels[1:])
            lines.append(Line(f"note: {visible(change.display_name)}: {extra}", "medium"))
    if drift.instructions is not None:
        lines.append(Line(""))
        lines.append(Line("instructions: changed", "high"))
        lines.append(Line("  labels: " + "; ".join(x.text for x in drift.instructions.labels)))
        lines.extend(
            Line(f"  {x.text}", x.style)
            for x in text_diff(
                drift.instructions.old or "",
                drift.instructions.new or "",
                name="server-instructions",
            )
        )
    for note in result.notes:
        lines.append(Line(f"note: {note}", "dim"))
    return lines


def _finding_json(f: SchemaFinding) -> dict[str, Any]:
    return {
        "kind": f.kind,
        "path": f.path,
        "pointer": f.pointer,
        "class": f.cls,
        "widened": f.widened,
        "detail": f.detail,
    }


def _output_event_json(event: str | None) -> list[dict[str, Any]]:
    # The whole outputSchema appeared or disappeared: mcp-tool-pin-check's own entry.
    if event is None:
        return []
    added = event == ADDED
    return [
        {
            "kind": "output_added" if added else "output_removed",
            "path": "outputSchema",
            "pointer": "",
            "class": "output-schema-added" if added else "output-schema-removed",
            "widened": False,
            "detail": "not present in the pin" if added else "outputSchema removed",
        }
    ]


def _change_json(change: ItemChange) -> dict[str, Any]:
    return {
        "name": change.key,
        "description_changed": change.description_changed,
        "description_diff": "\n".join(change.description_diff),
        "annotations_changed": change.annotations_changed,
        "schema_changes": [_finding_json(f) for f in change.input_findings],
        "output_changes": _output_event_json(change.output_event)
        + [_finding_json(f) for f in change.output_findings],
        "widened": change.widened,
        "output_widened": change.output_widened,
        "members": [
            {"member": m.member, "change": m.change, "detail": m.detail} for m in change.members
        ],
        "labels": [{"key": x.key, "severity": x.severity, "text": x.text} for x in change.labels],
        "level": change.level,
        "hash": {
            "pinned": change.old.hash if change.old else None,
            "current": change.new.hash if change.new else None,
        },
    }


def _identity_json(identity: Identity | None) -> dict[str, str | None] | None:
    return identity.to_json() if identity is not None else None


def check_json(result: CheckResult) -> dict[str, Any]:
    """``toolpin check --json`` (mcp-tool-pin-check's keys first, then toolpin's)."""
    drift = result.drift
    ident = drift.identity
    note = "identity was not pinned" if ident.pinned is None else None

    def part(kind: Kind) -> dict[str, Any]:
        return {
            "added": [c.key for c in drift.of_kind(kind, ADDED)],
            "removed": [c.key for c in drift.of_kind(kind, REMOVED)],
            "changed": [_change_json(c) for c in drift.of_kind(kind, CHANGED)],
            "unchanged": list(drift.unchanged.get(kind, ())),
        }

    tools = part(Kind.TOOL)
    out: dict[str, Any] = {
        **tools,
        "ok": result.ok,
        "lock_source": result.source,
        "pinned_at": result.pinned_at,
        "lock_format": result.lock_format,
        "entry": result.entry_name,
        "server": {
            "pinned": _identity_json(ident.pinned),
            "current": _identity_json(ident.current),
            "identity_added": ident.identity_added,
            "identity_removed": ident.identity_removed,
            "name_changed": ident.name_changed,
            "version_changed": ident.version_changed,
            "protocol_changed": ident.protocol_changed,
            "note": note,
        },
        "instructions": None
        if drift.instructions is None
        else {"changed": True, "labels": [x.key for x in drift.instructions.labels]},
        "not_checked": list(drift.not_checked),
        "notes": list(result.notes),
        "partial_listing": result.partial,
    }
    for kind in (Kind.PROMPT, Kind.RESOURCE, Kind.TEMPLATE):
        if kind in drift.compared:
            out[kind.field] = part(kind)
    return out


# ------------------------------------------------------------------------------------ hash


def hash_text(report: HashReport) -> list[Line]:
    """``toolpin hash``: each definition's hash, the set hash, the instructions hash."""
    lines: list[Line] = []
    for group in report.groups:
        if group.kind is not None:
            lines.append(Line(f"{group.kind.plural} ({len(group.items)}):", "header"))
        for key, digest in group.items:
            lines.append(Line(f"  {digest}  {visible(key)}"))
        if group.set_hash is not None:
            lines.append(Line(f"  set {group.set_hash}", "header"))
    if report.instructions_hash is not None:
        lines.append(Line(f"instructions {report.instructions_hash}"))
    return lines
