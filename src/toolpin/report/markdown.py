"""``toolpin snapshot --markdown``: the report as GitHub-flavoured Markdown, for a job
summary (``$GITHUB_STEP_SUMMARY``) and a pull-request comment.

GitHub renders that Markdown for everyone who opens the pull request, so server text
(names, descriptions, label details such as a field name) must not become markup there:
no HTML, no link or autolink, no ``@mention`` that notifies someone, no ``#123``
reference, no emoji shortcode, no control, bidi or invisible character. The rule that
gives all of this at once: **every string that came from a server is written only inside
a code span or a fenced code block**, whose delimiter is longer than any run of
backticks in it (so nothing inside can close it), after :func:`~toolpin.core.render.visible`
has written every unsafe character as ``\\u{hex}``. GitHub processes none of the above
inside code. The rest of the text is toolpin's own fixed wording.

Pure: builds a string, prints nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from toolpin.core.drift import Drift
from toolpin.core.labels import Label
from toolpin.core.render import Line, counted, visible
from toolpin.report.baseline import SCHEMA_ONLY_HEADING, split
from toolpin.report.text import full_diff

MAX_CHARS: Final = 60_000
"""The most characters of diff put into the report (a GitHub comment holds 65,536)."""
_BACKTICKS: Final = re.compile(r"`+")
_TITLE: Final = "toolpin snapshot"
NOTHING_SENT: Final = (
    "The baseline was read from this repository and the server was started on this runner."
)


def _longest_run(texts: Iterable[str]) -> int:
    return max((len(m.group()) for t in texts for m in _BACKTICKS.finditer(t)), default=0)


def code(text: str) -> str:
    """``text`` as an inline code span GitHub shows literally (made visible, on one line,
    delimited by more backticks than it holds)."""
    shown = visible(text)
    fence = "`" * (_longest_run([shown]) + 1)
    if not shown or shown[0] == "`" or shown[-1] == "`":
        shown = f" {shown} "  # one space each side, which Markdown drops again
    return f"{fence}{shown}{fence}"


def fenced(lines: Sequence[str], info: str = "") -> list[str]:
    """``lines`` as a fenced code block no line of it can close."""
    shown = [visible(line) for line in lines]
    fence = "`" * max(3, _longest_run(shown) + 1)
    return [f"{fence}{info}", *shown, fence]


def _clipped(lines: Sequence[Line], limit: int) -> tuple[list[str], int]:
    """The lines' texts up to ``limit`` characters, and how many were left out."""
    out: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        used += len(line.text) + 1
        if used > limit:
            return out, len(lines) - index
        out.append(line.text)
    return out, 0


def _accept(baseline: str, accept: str) -> list[str]:
    return [
        f"**To accept this change**, run this and commit {code(baseline)}:",
        "",
        *fenced([accept], "sh"),
    ]


def check_markdown(
    name: str,
    baseline: str,
    drift: Drift,
    *,
    accept: str,
    counts: Mapping[str, int] | None = None,
    limit: int = MAX_CHARS,
) -> str:
    """The report of ``snapshot --check``: the verdict, schema-only changes first (called
    out), the labels of every change, the full diff, how to accept it. ``counts`` are the
    definitions held, by singular kind (``{"tool": 3}``)."""
    if drift.ok:
        out = [
            f"### {_TITLE}: {code(name)} matches {code(baseline)}",
            "",
            f"The server lists the definitions of the committed baseline{_held(counts)}.",
            "",
            NOTHING_SENT,
        ]
        return "\n".join(out) + "\n"
    first, rest = split(drift)
    out = [f"### {_TITLE}: {code(name)} differs from {code(baseline)}", ""]
    if first.changes:
        out += [f"**{SCHEMA_ONLY_HEADING}:**", ""]
        out += [f"- {code(c.display_name)}: {code(_labels(c.labels))}" for c in first.changes]
        out.append("")
    items = rest.summary_items()
    if items:
        out += ["**What changed:**" if not first.changes else "**Everything else:**", ""]
        out += [f"- {code(item)}: {code(_labels(labels))}" for item, labels in items]
        out.append("")
    diff = full_diff(first) + full_diff(rest)
    shown, left = _clipped(diff, limit)
    out += ["**The diff:**", ""]
    out += fenced(shown, "diff")
    if left:
        out += [
            "",
            f"{counted(left, 'more line')} not shown here: run `toolpin snapshot --check` "
            "for the whole diff.",
        ]
    out += ["", *_accept(baseline, accept), "", NOTHING_SENT]
    return "\n".join(out) + "\n"


def _held(counts: Mapping[str, int] | None) -> str:
    if not counts:
        return ""
    return " (" + ", ".join(counted(n, kind) for kind, n in counts.items()) + ")"


def _labels(labels: Iterable[Label]) -> str:
    return "; ".join(label.text for label in labels)


def written_markdown(
    name: str,
    baseline: str,
    keys: Mapping[str, Sequence[str]],
    *,
    accept: str,
    created: bool = True,
) -> str:
    """The report of ``snapshot`` (no ``--check``): what the baseline now holds. With
    ``created`` (a first run: no baseline was committed) it says nothing was compared and
    how to write and commit one. ``keys`` are the definition names per listing."""
    if created:
        out = [
            f"### {_TITLE}: no baseline yet for {code(name)}",
            "",
            f"There is no {code(baseline)} in this repository, so nothing was compared. "
            "This run wrote one on the runner. Write it where you work and commit it; from "
            "then on every change to a definition is shown here.",
            "",
            *fenced([accept], "sh"),
            "",
        ]
    else:
        out = [f"### {_TITLE}: wrote {code(baseline)} for {code(name)}", ""]
    for kind, names in keys.items():
        out += [f"**{visible(kind)}** ({len(names)}):", ""]
        out += [f"- {code(key)}" for key in names]
        out.append("")
    out.append(NOTHING_SENT)
    return "\n".join(out) + "\n"
