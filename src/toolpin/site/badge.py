"""Badges that state one dated fact about time: ``badge/<id>.svg`` and ``badge/<id>.json``.

Both outputs come from :func:`badge_for` (one state, one text). Every text carries a date,
so a badge that stopped being rebuilt cannot mislead:

* ``unchanged 91d · 4 Sep`` — the definitions have not moved in 91 days, as of the last
  good look on 4 Sep (green);
* ``changed today · 1 Dec`` / ``changed 29 Nov`` — a change first seen in the last 7 days
  (amber; "today" always comes with its date, so a badge frozen later still tells the truth);
* ``changed since 4 Sep`` — a change first seen after a gap in the crawl: it happened after
  the last good look on 4 Sep, the day is unknown (amber);
* ``first recorded today · 1 Dec`` / ``first recorded 29 Nov`` — tracking began in the last
  7 days (green);
* ``last checked 4 Sep`` — no good look in more than 3 days (grey);
* ``log does not verify`` — the only red state.

No state says safe, secure, verified, trusted, audited or approved. Text widths come from
DejaVu Sans's advance widths (:data:`GLYPH_WIDTHS`, read from ``DejaVuSans.ttf`` 2.37's
``hmtx`` table, 2048 units per em) at 11 px, the font the SVG asks for first; the browser
test measures the rendered text and requires 5-7 px of padding on each side.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass
from typing import Final

from markupsafe import escape

from toolpin.site.model import ServerHistory, parse_time

LABEL: Final = "toolpin"
FONT: Final = "DejaVu Sans,Verdana,Geneva,sans-serif"
FONT_SIZE: Final = 11
PADDING: Final = 6
STALE_AFTER: Final = dt.timedelta(days=3)
RECENT: Final = dt.timedelta(days=7)
GAP: Final = dt.timedelta(days=2)
"""A change whose last good look before is further back than this came after a gap."""

GREEN: Final = "#2e7d32"
AMBER: Final = "#a15c00"
GREY: Final = "#5f6368"
RED: Final = "#c62828"
LABEL_COLOR: Final = "#3c3c3c"

_CHARS: Final = (
    " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`"
    "abcdefghijklmnopqrstuvwxyz{|}~\u00b7\u2026"
)
_ADVANCES: Final = (
    651, 821, 942, 1716, 1303, 1946, 1597, 563, 799, 799, 1024, 1716, 651, 739, 651, 690,
    1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 690, 690, 1716, 1716, 1716,
    1087, 2048, 1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 604, 604, 1343, 1141, 1767,
    1532, 1612, 1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403, 1251, 1403, 799, 690,
    799, 1716, 1024, 1024, 1255, 1300, 1126, 1300, 1260, 721, 1300, 1298, 569, 569, 1186,
    569, 1995, 1298, 1253, 1300, 1300, 842, 1067, 803, 1298, 1212, 1675, 1212, 1212, 1075,
    1303, 690, 1303, 1716, 651, 2048,
)  # fmt: skip
GLYPH_WIDTHS: Final = dict(zip(_CHARS, _ADVANCES, strict=True))
UNITS_PER_EM: Final = 2048
_MONTHS: Final = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
CLAIM_WORDS: Final = ("safe", "secure", "verified", "trusted", "audited", "approved")

__all__ = ["Badge", "badge_for", "badge_state", "render_badge", "text_width"]


def text_width(text: str) -> float:
    """Advance width of ``text`` in px at 11 px DejaVu Sans (unknown glyphs count as 'W')."""
    units = sum(GLYPH_WIDTHS.get(ch, GLYPH_WIDTHS["W"]) for ch in text)
    return units * FONT_SIZE / UNITS_PER_EM


@dataclass(frozen=True)
class Badge:
    """One badge state: the message and its colour (the label is always ``toolpin``)."""

    state: str
    message: str
    color: str

    @property
    def text(self) -> str:
        """The whole badge text: ``<title>``, ``aria-label`` and the page's status line."""
        return f"{LABEL}: {self.message}"


def _day(moment: dt.datetime, now: dt.datetime) -> str:
    text = f"{moment.day} {_MONTHS[moment.month - 1]}"
    return text if moment.year == now.year else f"{text} {moment.year}"


def _when(moment: dt.datetime, now: dt.datetime) -> str:
    """``today · 1 Dec`` (still true when the badge is looked at later) or ``29 Nov``."""
    day = _day(moment, now)
    return f"today · {day}" if moment.date() == now.date() else day


def badge_state(history: ServerHistory, now: dt.datetime) -> Badge:
    """The badge of a server at ``now`` (the build's clock, given with ``--now``)."""
    last_ok = parse_time(history.last_ok or history.latest.observed_at)
    if now - last_ok > STALE_AFTER:
        return Badge("stale", f"last checked {_day(last_ok, now)}", GREY)
    latest = history.latest
    seen = parse_time(latest.observed_at)
    if len(history.versions) == 1:
        if now - seen <= RECENT:
            return Badge("new", f"first recorded {_when(seen, now)}", GREEN)
    elif now - seen <= RECENT:
        after = latest.last_good_look
        if after is not None and seen - parse_time(after) > GAP:
            return Badge("changed-since", f"changed since {_day(parse_time(after), now)}", AMBER)
        if after is None:
            previous = parse_time(history.versions[-2].observed_at)
            if seen - previous > GAP:
                return Badge("changed-since", f"changed since {_day(previous, now)}", AMBER)
        return Badge("changed", f"changed {_when(seen, now)}", AMBER)
    days = max(0, (now.date() - seen.date()).days)
    return Badge("unchanged", f"unchanged {days}d · {_day(last_ok, now)}", GREEN)


def badge_for_unverified() -> Badge:
    """The one red state: the log did not verify."""
    return Badge("unverified", "log does not verify", RED)


def render_badge(badge: Badge) -> tuple[bytes, bytes]:
    """``(svg, shields endpoint json)`` of one badge."""
    label_w = math.ceil(text_width(LABEL)) + 2 * PADDING
    message_w = math.ceil(text_width(badge.message)) + 2 * PADDING
    total = label_w + message_w
    title = escape(badge.text)
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="20" '
        f'role="img" aria-label="{title}">'
        f"<title>{title}</title>"
        f'<rect width="{label_w}" height="20" fill="{LABEL_COLOR}"/>'
        f'<rect x="{label_w}" width="{message_w}" height="20" fill="{badge.color}"/>'
        f'<g fill="#fff" font-family="{FONT}" font-size="{FONT_SIZE}">'
        f'<text id="label" x="{PADDING}" y="14">{escape(LABEL)}</text>'
        f'<text id="message" x="{label_w + PADDING}" y="14">{escape(badge.message)}</text>'
        "</g></svg>\n"
    )
    endpoint = {
        "schemaVersion": 1,
        "label": LABEL,
        "message": badge.message,
        "color": badge.color.lstrip("#"),
        "labelColor": LABEL_COLOR.lstrip("#"),
        "isError": badge.state == "unverified",
        "cacheSeconds": 300,
    }
    data = json.dumps(endpoint, sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n"
    return svg.encode("utf-8"), data


def badge_for(history: ServerHistory, now: dt.datetime) -> tuple[Badge, bytes, bytes]:
    """The state of a server's badge and both renderings of it."""
    badge = badge_state(history, now)
    svg, endpoint = render_badge(badge)
    return badge, svg, endpoint
