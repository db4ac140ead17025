"""What ``toolpin review`` prints for a change waiting in the local pin store.

Pure: takes the pinned and the observed snapshot (and the record's plain fields), compares
them and returns styled lines; prints nothing. The digest named in the closing
``approve --expect`` line is the surface hash of exactly the observation shown above it.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolpin.core.drift import ADDED, compare
from toolpin.core.render import Line, text_diff, visible, wrapped
from toolpin.core.snapshot import Snapshot
from toolpin.report.text import added_lines, review_lines


def pending_review(
    *,
    label: str,
    server_id: str,
    pinned_at: str,
    observed_at: str,
    mid_session: bool,
    digest: str,
    pinned: Snapshot,
    observed: Snapshot,
    command_lines: Sequence[Line] = (),
) -> list[Line]:
    """The labelled summary and full diff of a waiting change, then how to accept it.

    ``command_lines`` say when the observation was made with another command than the
    approved one (a pin found by ``--name``)."""
    drift = compare(pinned, observed)
    return [
        Line(visible(label), "header"),
        Line(f"approved  {visible(pinned_at)}"),
        Line(f"observed  {visible(observed_at)}" + ("  (during a session)" if mid_session else "")),
        Line(""),
        *command_lines,
        *review_lines(drift),
        Line(""),
        Line(f"If you accept this change:  toolpin approve {server_id} --expect {digest[:16]}"),
        Line("Otherwise, do nothing and the pin stands."),
    ]


def pending_additions(pinned: Snapshot, observed: Snapshot) -> list[Line]:
    """What a waiting change adds, in full (for ``toolpin show``): new definitions and
    new instructions, made visible and wrapped. Changed definitions are in ``review``."""
    drift = compare(pinned, observed)
    lines: list[Line] = []
    for change in drift.changes:
        if change.status == ADDED:
            lines.extend(added_lines(change))
    if drift.instructions is not None and drift.instructions.new is not None:
        lines.append(Line("~ server instructions (the text the change would approve):", "add"))
        lines.extend(
            text_diff(drift.instructions.old or "", drift.instructions.new, name="instructions")
        )
    return wrapped(lines, indent="    ")
