"""The install/ page: rendered without JavaScript from the Python generator, a script file
only, and a server link that never carries a command."""

from __future__ import annotations

import re
from pathlib import Path

from toolpin.clients.install_links import CLIENTS, InstallRequest, install_links
from toolpin.site.install import EXAMPLE_ARGV, EXAMPLE_NAME, install_script, write_install_page
from toolpin.site.render import environment

CONTEXT = {
    "checkpoint": {
        "origin": "example.com/log",
        "size": 6,
        "root": "ROOT",
        "time": "2026-11-06T12:00:00Z",
    },
    "base_url": "https://log.example.org",
}


def test_page_shows_every_entry_for_the_example_without_javascript(tmp_path: Path) -> None:
    files = write_install_page(environment(), tmp_path, CONTEXT)
    assert [p.relative_to(tmp_path).as_posix() for p in files] == [
        "install/index.html",
        "install/install.js",
    ]
    page = (tmp_path / "install/index.html").read_text(encoding="utf-8")
    links = install_links(InstallRequest(EXAMPLE_ARGV, EXAMPLE_NAME))
    from markupsafe import escape

    for client in CLIENTS:
        assert f'id="out-{client}">{escape(links.outputs[client])}</code>' in page
    assert (tmp_path / "install/install.js").read_bytes() == install_script()


def test_no_inline_script_or_style_and_no_command_from_the_url(tmp_path: Path) -> None:
    write_install_page(environment(), tmp_path, CONTEXT)
    page = (tmp_path / "install/index.html").read_text(encoding="utf-8")
    scripts = re.findall(r"<script[^>]*>(.*?)</script>", page, flags=re.S)
    assert scripts == ["", ""]  # both external: the page's own and the footer's status line
    assert '<script src="install.js"></script>' in page
    assert 'static/status.js" defer></script>' in page
    assert not re.search(r"\son[a-z]+=", page) and "style=" not in page
    script = install_script().decode("utf-8")
    assert not re.search(
        r"innerHTML|outerHTML|insertAdjacentHTML|eval\(|fetch\(|XMLHttpRequest", script
    )
    assert "cmd" not in re.findall(r"params\.get\(\"([a-z]+)\"\)", script)
    assert re.findall(r"params\.get\(\"([a-z]+)\"\)", script) == ["server"]


def test_unchanged_rebuild_touches_no_file(tmp_path: Path) -> None:
    files = write_install_page(environment(), tmp_path, CONTEXT)
    stamps = [p.stat().st_mtime_ns for p in files]
    written: list[Path] = []
    write_install_page(environment(), tmp_path, CONTEXT, on_write=written.append)
    assert written == [] and [p.stat().st_mtime_ns for p in files] == stamps
