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
DejaVu Sans's advance widths and kerning pairs (:data:`GLYPH_WIDTHS` and :data:`KERNING`,
read from ``DejaVuSans.ttf`` 2.37's ``hmtx`` table and GPOS ``kern`` feature, 2048 units per
em) at 11 px, the font the SVG asks for first; the browser
test measures the rendered text and requires 5-7 px of padding on each side.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Final

from markupsafe import escape

from toolpin.site.model import MONTHS, ServerHistory, parse_time

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
_KERN_TEXT: Final = (
    "-A-45 -B-73 -G75 -J114 -O57 -Q75 -T-188 -V-120 -W-83 -X-102 -Y-243 -o38 -v-55 -y-36 "
    "A--45 A.-36 A:-36 AA57 AC-36 AG-36 AO-36 AQ-36 AT-159 AV-131 AW-112 AY-159 Ac-36 Ad-36 "
    "Ae-36 Af-73 Ao-36 Aq-36 At-36 Av-120 Aw-83 Ay-139 BC-36 BG-36 BO-36 BS-36 BV-63 BW-73 "
    "BY-112 CY-36 DA-36 DV-36 DY-112 F.-329 F:-159 FA-188 FS-36 FT-36 Fa-188 Fe-112 Fi-149 "
    "Fo-73 Fr-149 Fu-112 Fy-188 GT-73 GY-102 H.-36 J--73 JA-36 K--215 KA-36 KC-112 KO-112 "
    "KT-159 KU-55 KW-73 KY-73 Ka-36 Ke-102 Ko-102 Ku-102 Ky-149 L--36 LA47 LO-73 LT-282 "
    "LU-102 LV-225 LW-188 LY-272 Le-36 Lo-36 Lu-36 Ly-188 O-57 O.-83 O:-36 OA-36 OV-36 "
    "OX-131 OY-112 P--45 P.-319 PA-131 PY-45 Pa-92 Pe-73 Pi-45 Pn-36 Po-73 Pr-36 Ps-36 Pu-36 "
    "Q-57 R--83 R.-73 R:-63 RA-83 RC-102 RT-149 RV-112 RW-83 RY-131 Ra-45 Re-92 Ro-92 Ru-92 "
    "Ry-112 SA38 T--188 T.-243 T:-225 TA-159 TC-120 TT-36 Ta-339 Tc-348 Te-348 Ti-63 To-348 "
    "Tr-301 Ts-339 Tu-311 Tw-339 Ty-319 UZ-36 V--120 V.-264 V:-167 VA-131 VO-36 Va-159 "
    "Ve-159 Vi-45 Vo-159 Vu-139 Vy-55 W--83 W.-235 W:-120 WA-112 Wa-131 We-120 Wi-45 Wo-120 "
    "Wr-92 Wu-73 Wy-36 X--102 XC-149 XO-131 XT-36 Xe-92 Y--243 Y.-415 Y:-272 YA-159 YC-112 "
    "YO-112 Ya-282 Ye-272 Yi-73 Yo-272 Yu-235 Z--36 ex-36 f--112 f.-149 f:-73 ft-36 fw-36 "
    "fy-36 ka-36 ke-73 ko-73 ku-63 ky-73 o-38 o.-36 ox-63 r--131 r.-188 r:-36 rc-45 rd-36 "
    "re-45 rg-36 rh-36 rm-36 rn-36 ro-45 rq-36 rr-36 rx-55 v--55 v.-159 v:-112 w.-188 w:-112 "
    "xc-36 xe-63 xo-63 y--36 y.-292 y:-149 "
)
KERNING: Final = {item[:2]: int(item[2:]) for item in _KERN_TEXT.split()}
"""Pair adjustments of the font's GPOS ``kern`` feature for these glyphs (units per em)."""
CLAIM_WORDS: Final = ("safe", "secure", "verified", "trusted", "audited", "approved")

__all__ = ["Badge", "badge_for", "badge_state", "render_badge", "text_width"]


def text_width(text: str) -> float:
    """Advance width of ``text`` in px at 11 px DejaVu Sans, kerned (unknown glyphs count
    as 'W')."""
    units = sum(GLYPH_WIDTHS.get(ch, GLYPH_WIDTHS["W"]) for ch in text)
    units += sum(KERNING.get(text[i : i + 2], 0) for i in range(len(text) - 1))
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
    text = f"{moment.day} {MONTHS[moment.month - 1]}"
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
    label_w = round(text_width(LABEL) + 2 * PADDING, 1)
    message_w = round(text_width(badge.message) + 2 * PADDING, 1)
    total = round(label_w + message_w, 1)
    title = escape(badge.text)
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="20" '
        f'role="img" aria-label="{title}">'
        f"<title>{title}</title>"
        f'<rect width="{label_w}" height="20" fill="{LABEL_COLOR}"/>'
        f'<rect x="{label_w}" width="{message_w}" height="20" fill="{badge.color}"/>'
        f'<g fill="#fff" font-family="{FONT}" font-size="{FONT_SIZE}">'
        f'<text id="label" x="{PADDING}" y="14">{escape(LABEL)}</text>'
        f'<text id="message" x="{round(label_w + PADDING, 1)}" y="14">'
        f"{escape(badge.message)}</text>"
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
