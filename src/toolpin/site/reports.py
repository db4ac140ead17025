"""The site's ``reports/`` pages: every month of the log, and what changed in the last day.

Writes, from the verified log (:class:`toolpin.crawl.report.LogView`)::

    reports/index.html            every month, newest first, with its counts
    reports/<YYYY-MM>.html        the monthly drift report (label totals, gaps, servers)
    reports/<YYYY-MM>.json        the same report as JSON (``toolpin log report --verify``)
    reports/latest.html, .json    the last 24 hours before the build time, with proofs

Every number comes from :mod:`toolpin.crawl.report`, the same code as
``toolpin log report``; pages carry no third-party text (server names only when they are
plain identifiers). A file is rewritten only when its bytes change.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import jinja2
import orjson

from toolpin.core.render import plain_json
from toolpin.crawl.report import LogView, load_view, monthly_report, since_report
from toolpin.errors import InputError
from toolpin.site.fragments import tool_count_rows
from toolpin.site.output import write_if_changed

__all__ = ["months_of", "report_json", "write_report_pages"]


def months_of(view: LogView, until: str = "") -> list[str]:
    """Every ``YYYY-MM`` from the first observation's month to the last's (or to ``until``,
    the build's month, when later), in order."""
    stamps = sorted(c.observed_at[:7] for c in view.changes)
    if not stamps:
        return []
    year, month = int(stamps[0][:4]), int(stamps[0][5:7])
    last = max(stamps[-1], until)
    out = []
    while f"{year:04d}-{month:02d}" <= last:
        out.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return out


_BEYOND_ASCII: Final = re.compile("[^\x00-\x7e]")
"""What ``ensure_ascii`` escapes besides orjson's escapes: DEL and every non-ASCII
character (outside strings a JSON text is all ASCII)."""


def _ascii_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code > 0xFFFF:  # a surrogate pair, as json.dumps writes it
        code -= 0x10000
        return f"\\u{0xD800 | code >> 10:04x}\\u{0xDC00 | code & 0x3FF:04x}"
    return f"\\u{code:04x}"


def report_json(report: Mapping[str, Any]) -> str:
    """``json.dumps(report, indent=2, ensure_ascii=True)``: for a plain report (see
    :func:`toolpin.core.render.plain_json`) written by orjson, whose indented output in
    member order is that text once DEL and non-ASCII characters are escaped as
    ``ensure_ascii`` escapes them."""
    try:
        plain = plain_json(report)
    except RecursionError:
        plain = False
    if plain:
        try:
            text = orjson.dumps(report, option=orjson.OPT_INDENT_2).decode()
        except TypeError:  # orjson.JSONEncodeError
            text = ""
        if text:
            return _BEYOND_ASCII.sub(_ascii_escape, text)
    return json.dumps(report, indent=2, ensure_ascii=True)


def _view(log: LogView | str | Path, context: Mapping[str, Any]) -> LogView:
    if isinstance(log, LogView):
        return log
    verifier = context.get("verifier")
    if verifier is None:
        raise InputError("write_report_pages needs a LogView, or context['verifier'] with a path")
    cache = context.get("report_cache")
    return load_view(
        log,
        verifier,
        cache=Path(cache) if cache is not None else None,
        known=context.get("report_known"),
        audited=context.get("audited"),
        observations=context.get("report_observations"),
    )


def _build_time(context: Mapping[str, Any]) -> tuple[str, dt.datetime]:
    if context.get("now") is not None:  # the site's --now
        text = str(context["now"])
    else:
        checkpoint = context["checkpoint"]
        text = str(checkpoint["time"] if isinstance(checkpoint, Mapping) else checkpoint.time)
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise InputError("the build time needs a time zone")
    moment = moment.astimezone(dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ"), moment


def write_report_pages(
    env: jinja2.Environment,
    out_dir: str | Path,
    context: Mapping[str, Any],
    log: LogView | str | Path,
    *,
    on_write: Callable[[Path], None] | None = None,
) -> list[Path]:
    """Render ``reports/`` into ``out_dir``; returns every file of it (written or kept).

    ``context`` is the builder's page context (``checkpoint`` with ``size``, ``root`` and
    ``time``, and ``base_url``); ``log`` the verified log view (or its directory, with
    ``context["verifier"]`` and optionally ``context["report_cache"]``, a file outside the
    published folder where explanations are kept between builds, ``context["report_known"]``,
    the explanations the site already made, and ``context["audited"]``, the checkpoint its
    audit verified; see :func:`toolpin.crawl.report.load_view`). The build time
    (``checkpoint.time``) is the only clock read, so the same log and time give the same
    bytes.
    """
    view = _view(log, context)
    generated, moment = _build_time(context)
    root = Path(out_dir) / "reports"
    files: list[Path] = []

    def emit(name: str, data: bytes) -> None:
        path = root / name
        if write_if_changed(path, data) and on_write is not None:
            on_write(path)
        files.append(path)

    months = months_of(view, generated[:7])
    summaries = []
    for month in months:
        report = monthly_report(view, month, generated_at=generated)
        emit(f"{month}.json", (report_json(report) + "\n").encode())
        page = env.get_template("report_month.html").render(
            **context,
            report=report,
            tool_count_rows=tool_count_rows(report["byToolCount"]),
            page_path=f"reports/{month}.html",
        )
        emit(f"{month}.html", page.encode("utf-8"))
        summaries.append(report)
    latest = since_report(view, cutoff=moment - dt.timedelta(hours=24), generated_at=generated)
    emit("latest.json", (report_json(latest) + "\n").encode())
    emit(
        "latest.html",
        env.get_template("report_since.html")
        .render(**context, report=latest, page_path="reports/latest.html")
        .encode("utf-8"),
    )
    index = env.get_template("report_index.html").render(
        **context, reports=list(reversed(summaries)), latest=latest, page_path="reports/"
    )
    emit("index.html", index.encode("utf-8"))
    return files
