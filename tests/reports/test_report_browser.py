"""The reports/ pages in headless Chromium: every page loads with zero console errors or
CSP violations, axe-core finds nothing, and the hostile server name adds no element."""

from __future__ import annotations

from pathlib import Path

from tests.pages import axe_violations, chromium, open_page, serve, site_static
from tests.reports.logbuilder import LogBuilder
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
    "base_url": "",
}


def test_report_pages_load_cleanly_and_are_accessible(history: LogBuilder, tmp_path: Path) -> None:
    view = load_view(history.path, Verifier.from_text(history.vkey))
    write_report_pages(environment(), tmp_path, CONTEXT, view)
    site_static(tmp_path)
    pages = ["reports/", "reports/2026-11.html", "reports/2026-10.html", "reports/latest.html"]
    with serve(tmp_path) as url, chromium() as browser:
        for rel in pages:
            page, problems = open_page(browser, f"{url}/{rel}")
            assert page.locator("h1").count() == 1, rel
            # one script only, external: the footer's status line (static/status.js)
            sources = page.locator("script").evaluate_all("els => els.map(e => e.src)")
            assert [src.rsplit("/", 2)[-2:] for src in sources] == [["static", "status.js"]], rel
            assert page.locator("script:not([src])").count() == 0, rel
            assert page.locator("img").count() == 0, rel  # the hostile name's <img> is text
            assert axe_violations(page) == [], rel
            assert problems == [], rel
            page.close()
