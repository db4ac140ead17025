"""The site's reports/ pages: deterministic, incremental, no third-party text, no script."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.reports.conftest import HOSTILE
from tests.reports.logbuilder import LogBuilder, tools
from toolpin.crawl.report import load_view
from toolpin.publog.note import Verifier
from toolpin.site.render import environment
from toolpin.site.reports import write_report_pages

CONTEXT = {
    "checkpoint": {
        "origin": "example.com/log",
        "size": 6,
        "root": "ROOT",
        "time": "2026-11-06T12:00:00Z",
    },
    "base_url": "https://log.example.org",
}


def _build(history: LogBuilder, out: Path) -> list[Path]:
    view = load_view(history.path, Verifier.from_text(history.vkey))
    return write_report_pages(environment(), out, CONTEXT, view)


def test_pages_for_every_month_and_the_last_day(history: LogBuilder, tmp_path: Path) -> None:
    files = _build(history, tmp_path / "site")
    names = sorted(p.name for p in files)
    assert names == [
        "2026-10.html",
        "2026-10.json",
        "2026-11.html",
        "2026-11.json",
        "index.html",
        "latest.html",
        "latest.json",
    ]
    november = json.loads((tmp_path / "site/reports/2026-11.json").read_text(encoding="utf-8"))
    assert november["servers"]["changed"] == 3
    assert november["generatedAt"] == "2026-11-06T12:00:00Z"
    latest = json.loads((tmp_path / "site/reports/latest.json").read_text(encoding="utf-8"))
    assert [c["index"] for c in latest["changes"]] == [4, 5]
    page = (tmp_path / "site/reports/2026-11.html").read_text(encoding="utf-8")
    assert "Drift report, 2026-11" in page and "secrets" in page
    index = (tmp_path / "site/reports/index.html").read_text(encoding="utf-8")
    assert index.index("2026-11.html") < index.index("2026-10.html")  # newest first


def test_no_server_text_no_inline_script_no_labels_by_server(
    history: LogBuilder, tmp_path: Path
) -> None:
    for path in _build(history, tmp_path / "site"):
        text = path.read_text(encoding="utf-8")
        for needle in (HOSTILE, "onerror", "\u202e", "Read a file", "id_rsa"):
            assert needle not in text, (path.name, needle)
        if path.suffix == ".html":
            assert not re.search(r"<script(?![^>]*\bsrc=)", text)
            assert not re.search(r"\son[a-z]+=", text) and "style=" not in text
    month = (tmp_path / "site/reports/2026-11.html").read_text(encoding="utf-8")
    servers_table = month.split("Servers, by count of tools changed", 1)[1].split("<h2>", 1)[0]
    assert "<code>" not in servers_table  # no label key in the per-server table


def test_rebuild_is_byte_identical_and_touches_no_file(history: LogBuilder, tmp_path: Path) -> None:
    out = tmp_path / "site"
    files = _build(history, out)
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files}
    view = load_view(history.path, Verifier.from_text(history.vkey))
    written: list[Path] = []
    write_report_pages(environment(), out, CONTEXT, view, on_write=written.append)
    assert written == []
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files} == before


def test_months_run_to_the_build_month_even_without_changes(
    history: LogBuilder, tmp_path: Path
) -> None:
    view = load_view(history.path, Verifier.from_text(history.vkey))
    context = {**CONTEXT, "checkpoint": {**CONTEXT["checkpoint"], "time": "2027-01-02T00:00:00Z"}}
    files = write_report_pages(environment(), tmp_path, context, view)
    names = {p.name for p in files}
    assert {"2026-12.html", "2027-01.json"} <= names
    december = json.loads((tmp_path / "reports/2026-12.json").read_text(encoding="utf-8"))
    assert december["servers"]["changed"] == 0 and december["partial"] is False
    assert december["start"]["size"] == december["end"]["size"] == 6


def test_the_explanation_cache_is_reused_and_gives_the_same_report(
    history: LogBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolpin.crawl.report as rep

    verifier = Verifier.from_text(history.vkey)
    cache = tmp_path / "cache.json"
    fresh = rep.load_view(history.path, verifier, cache=cache)
    assert cache.is_file()
    calls: list[int] = []
    real = rep._explain
    monkeypatch.setattr(rep, "_explain", lambda a, b: calls.append(1) or real(a, b))
    again = rep.load_view(history.path, verifier, cache=cache)
    assert calls == []
    assert again.changes == fresh.changes
    history.batch(
        ("aaaaaaaaaaaaaaaa", "io.example/search", tools(search="New."), "2026-11-07T00:00:00Z")
    )
    grown = rep.load_view(history.path, verifier, cache=cache)
    assert calls == [1] and grown.changes[:-1] == fresh.changes
    doc = json.loads(cache.read_text(encoding="utf-8"))
    doc["toolpin"] = "0.0.0-other"
    cache.write_text(json.dumps(doc), encoding="utf-8")
    rep.load_view(history.path, verifier, cache=cache)
    assert len(calls) == 1 + 4  # another version's explanations are not trusted
