"""What a pass reports, in toolpin's words: one text line per event, and an Atom feed of
the last reported events (kept in the state file), written atomically after each pass.

Every string that came from the log (a server's name or id) was made visible and clipped
when the event was built; the feed escapes it for XML as well.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote
from xml.sax.saxutils import escape

KNOWN_LABELS: Final = frozenset(
    {
        # core/labels.py and core/drift.change_keys
        "instruction", "secrets", "link", "hidden", "new-field", "field-type",
        "field-removed", "new-argument", "output-schema", "hints", "schema-widened",
        "schema-tightened", "schema-changed", "member-changed", "wording", "removed",
        "new-tool", "new-prompt", "new-resource", "new-resource-template",
        "possible-rename", "server-name",
        # the monitor's own: a server's first entry, a new release with the same
        # definitions, definitions that could not be read
        "new-server", "package", "unknown",
    }
)  # fmt: skip
"""The label keys ``--labels`` accepts."""


def event_line(event: dict[str, Any]) -> str:
    """One line for a terminal."""
    if event.get("event") == "inconsistency":
        return f"INCONSISTENT ({event['kind']}): {event['message']}"
    who = event.get("server_name") or "an unnamed server"
    sid = event.get("server_id") or "?"
    labels = event.get("labels")
    said = f" [{', '.join(labels)}]" if labels else ""
    change = {"new": "first recorded", "definitions": "changed", "package": "new release"}.get(
        str(event.get("change")), "recorded"
    )
    at = event.get("observed_at") or "an unknown time"
    return f"entry {event['index']}: {who} ({sid}) {change} at {at}{said}"


def _xml(text: object) -> str:
    return escape(str(text)).replace("\ufffe", "\\u{fffe}").replace("\uffff", "\\u{ffff}")


def _entry_key(event: dict[str, Any]) -> str:
    if event.get("event") == "inconsistency":
        return f"inconsistency:{event.get('kind')}:{event.get('at')}"
    return str(int(event.get("index", 0)))


def atom_feed(origin: str, events: Sequence[dict[str, Any]], *, now: datetime | None = None) -> str:
    """An Atom feed of ``events`` (newest first)."""
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    feed_id = f"urn:toolpin:monitor:{quote(origin, safe='/.-_~')}"
    out = [
        '<?xml version="1.0" encoding="utf-8"?>',
        '<feed xmlns="http://www.w3.org/2005/Atom">',
        f"  <id>{_xml(feed_id)}</id>",
        f"  <title>toolpin monitor: {_xml(origin)}</title>",
        f"  <updated>{stamp}</updated>",
        "  <author><name>toolpin log monitor</name></author>",
    ]
    for event in reversed(events):
        updated = event.get("observed_at") or stamp
        out += [
            "  <entry>",
            f"    <id>{_xml(feed_id)}:{_entry_key(event)}</id>",
            f"    <title>{_xml(event_line(event))}</title>",
            f"    <updated>{_xml(updated)}</updated>",
            f"    <summary>{_xml(event_line(event))}</summary>",
            "  </entry>",
        ]
    out.append("</feed>")
    return "\n".join(out) + "\n"


def write_atom(path: Path, origin: str, events: Sequence[dict[str, Any]]) -> None:
    from toolpin.errors import InputError
    from toolpin.util.fs import atomic_write

    try:
        atomic_write(path, atom_feed(origin, events).encode("utf-8"))
    except OSError as exc:
        raise InputError(f"the feed {path} cannot be written ({exc.strerror})") from None


__all__ = ["KNOWN_LABELS", "atom_feed", "event_line", "write_atom"]
