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
from toolpin.site.output import as_recorded, write_if_changed

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


def _month_end(month: str) -> str:
    year, number = int(month[:4]), int(month[5:7])
    return f"{year + (number == 12):04d}-{number % 12 + 1:02d}-01T00:00:00Z"


class _Issued:
    """The site's monthly reports of months that are over, each issued once.

    Given the site's published checkpoints (``context["report_published"]``: ``(size,
    root, note)`` of each, oldest first, the current one last), the report of a month that
    ended before the build time is the report of the log at the first published checkpoint
    that holds every entry observed before the month's end, made as of the month's end
    (``generatedAt``; so never ``partial``). It names that checkpoint, not the current one,
    so it keeps its bytes while the log grows with later entries; ``toolpin log report
    --verify`` checks it at its own checkpoint. The last build's files of such a month are
    kept, without making the report again, when it recorded them with the same inputs key
    (toolpin's code, the site's address, the month, the checkpoint) and they are still as
    recorded (``context["report_groups"]`` and ``context["report_recorded"]``: the build
    state's groups and files); the groups of the months made or kept are put in
    ``context["report_groups_made"]``. Without published checkpoints every month is made
    at the view's checkpoint, as of the build time."""

    def __init__(self, view: LogView, context: Mapping[str, Any]) -> None:
        self._view = view
        published = context.get("report_published")
        self._published: list[tuple[int, bytes, str]] = []
        if published:
            import base64

            self._published = [
                (int(size), base64.b64decode(root), str(note)) for size, root, note in published
            ]
            if self._published[-1][0] != view.size:
                raise InputError("internal error: the published checkpoints are not the view's")
        self._groups: Mapping[str, Any] = context.get("report_groups") or {}
        self._recorded: Mapping[str, Any] = context.get("report_recorded") or {}
        self._made: dict[str, Any] | None = context.get("report_groups_made")
        self._prefix = str(context.get("report_code", "")) + "\0" + str(context.get("base_url"))
        self._times: list[tuple[dt.datetime, int]] | None = None

    def _last_before(self, end: dt.datetime) -> int:
        """The largest index of an entry observed before ``end`` (-1: none)."""
        import bisect

        if self._times is None:
            pairs = sorted(
                zip(self._view.observed_times(), (c.index for c in self._view.changes), strict=True)
            )
            running, most = [], -1
            for moment, index in pairs:
                most = max(most, index)
                running.append((moment, most))
            self._times = running
        n = bisect.bisect_left(self._times, (end, -1))
        return self._times[n - 1][1] if n else -1

    def at(self, month: str, moment: dt.datetime) -> tuple[int, bytes, str] | None:
        """The checkpoint the report of ``month`` is made at (``None``: the month is not
        over, or no published checkpoints were given)."""
        end = dt.datetime.fromisoformat(_month_end(month).replace("Z", "+00:00"))
        if not self._published or moment < end:
            return None
        last = self._last_before(end)
        return next(item for item in self._published if item[0] > last)

    def key(self, month: str, at: tuple[int, bytes, str]) -> str:
        import hashlib

        text = f"{self._prefix}\0{month}\0{at[0]}\0{at[1].hex()}\0{at[2]}"
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def view_at(self, at: tuple[int, bytes, str]) -> LogView:
        """The report view of the log at the published checkpoint ``at``."""
        import dataclasses

        size, root, note = at
        if size == self._view.size:
            return self._view
        changes = [c for c in self._view.changes if c.index < size]
        return dataclasses.replace(
            self._view, size=size, root=root, note=note, changes=changes, _times=None
        )

    def kept(self, folder: Path, month: str, key: str) -> dict[str, Any] | None:
        """The month's report as the last build made it with this ``key``, when its files
        are still as recorded (``None``: make it)."""
        group = self._groups.get(f"reports/{month}")
        rels = [f"reports/{month}.json", f"reports/{month}.html"]
        if group is None or group[0] != key or sorted(group[1]) != sorted(rels):
            return None
        for rel in rels:
            recorded = self._recorded.get(rel)
            if recorded is None or not as_recorded(folder.parent / rel, tuple(recorded)):
                return None
        try:
            report = orjson.loads((folder / f"{month}.json").read_bytes())
        except (OSError, ValueError):
            return None
        if not isinstance(report, dict):
            return None
        self.made(month, key)
        return report

    def made(self, month: str, key: str) -> None:
        if self._made is not None:
            self._made[f"reports/{month}"] = (
                key,
                [f"reports/{month}.html", f"reports/{month}.json"],
            )


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
    issued = _Issued(view, context)
    summaries = []
    for month in months:
        at, made_at, key = issued.at(month, moment), generated, ""
        if at is not None:  # a month that is over: its report at its own checkpoint
            made_at = _month_end(month)
            key = issued.key(month, at)
            kept = issued.kept(root, month, key)
            if kept is not None:
                files.extend(root / f"{month}.{ext}" for ext in ("json", "html"))
                summaries.append(kept)
                continue
        report = monthly_report(
            view if at is None else issued.view_at(at), month, generated_at=made_at
        )
        emit(f"{month}.json", (report_json(report) + "\n").encode())
        page = env.get_template("report_month.html").render(
            **context,
            report=report,
            tool_count_rows=tool_count_rows(report["byToolCount"]),
            page_path=f"reports/{month}.html",
        )
        emit(f"{month}.html", page.encode("utf-8"))
        if key:
            issued.made(month, key)
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
