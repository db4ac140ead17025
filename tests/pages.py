"""Serving built pages on loopback and opening them in Debian's headless Chromium
(``chromium-headless-shell``, never a downloaded browser), with the site's CSP as a header,
console problems collected, and axe-core for accessibility."""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/lib/chromium/chromium-headless-shell"
"""Debian's ``chromium-headless-shell``: Chromium's headless build (the same Blink and V8 as
``chromium``, without the desktop browser around it), the build playwright itself runs for
headless pages. The eight page-test modules, one after another: 43.4 s of CPU with
``chromium --headless``, 25.9 s with it (docs/testing.md, *Issue 24, sixth round*)."""
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; "
    "require-trusted-types-for 'script'; trusted-types 'none'"
)


class _Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/favicon.ico":  # the browser's own request, not a page's
            self.send_response(204)
            self.end_headers()
            return
        super().do_GET()

    def end_headers(self) -> None:
        self.send_header("Content-Security-Policy", CSP)
        super().end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def serve(root: Path) -> Iterator[str]:
    """``http://127.0.0.1:<port>`` serving ``root`` with the CSP header."""
    handler = functools.partial(_Handler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium (Debian's binary driven by playwright), stopped on exit.

    Playwright's sync API runs an event loop in this thread while it is open, and allows
    one driver at a time: hold it for a module at most (never the whole session), so the
    anyio tests that follow find no loop running."""
    if not Path(CHROMIUM).exists():
        pytest.fail(
            "Debian's headless Chromium is required for the page tests "
            "(apt-get install chromium-headless-shell; .ci/run does this)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def open_page(browser: Any, url: str) -> tuple[Any, list[str]]:
    """The loaded page and a list that collects console errors, warnings and page errors
    (CSP violations are reported there)."""
    page = browser.new_page()
    problems: list[str] = []
    page.on(
        "console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(url)
    page.wait_for_load_state("load")
    return page, problems


def axe_violations(page: Any) -> list[str]:
    """axe-core's violations on ``page`` (rule id and the first target of each)."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [
        f"{v['id']}: {v['nodes'][0]['target'] if v['nodes'] else ''}"
        for v in results.response["violations"]
    ]


def site_static(root: Path) -> None:
    """Copy the site's stylesheet and scripts into ``root/static`` (what ``toolpin log
    site`` writes beside every page), for pages rendered on their own in a test."""
    source = Path(__file__).resolve().parents[1] / "src" / "toolpin" / "site" / "static"
    target = root / "static"
    target.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.is_file() and not (target / item.name).exists():
            shutil.copy(item, target / item.name)
    # the small status file every page's footer reads (static/status.js)
    status = root / "api" / "v1" / "log.json"
    if not status.exists():
        status.parent.mkdir(parents=True, exist_ok=True)
        status.write_text('{"checkpoint": {"size": 1}}\n', encoding="utf-8")
