"""The site's ``install/`` page: protect one server in any MCP client, no network.

Writes ``install/index.html`` and ``install/install.js``. The page is complete without
JavaScript: it shows the entries for an example server, rendered here with
:func:`toolpin.clients.install_links.install_links`, and the ``toolpin install-links``
command that makes them for any server. The script (the same generator, in the browser;
no inline script, nothing fetched) regenerates them from the form. It reads nothing from
the URL but a log id (``#server=<16 hex>``), which it links to that server's page: a link
can never offer a command someone else chose.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from toolpin import __version__
from toolpin.clients.install_links import (
    CLIENT_TITLES,
    CLIENTS,
    LINK_CLIENTS,
    InstallRequest,
    install_links,
)
from toolpin.site.output import write_if_changed

EXAMPLE_ARGV: tuple[str, ...] = ("npx", "-y", "@modelcontextprotocol/server-everything")
EXAMPLE_NAME = "everything"

__all__ = ["EXAMPLE_ARGV", "EXAMPLE_NAME", "install_script", "write_install_page"]


def install_script() -> bytes:
    """The generator script served as ``install/install.js``."""
    return resources.files("toolpin.site").joinpath("static/install.js").read_bytes()


def write_install_page(
    env: jinja2.Environment,
    out_dir: str | Path,
    context: Mapping[str, Any],
    *,
    on_write: Callable[[Path], None] | None = None,
) -> list[Path]:
    """Render ``install/`` into ``out_dir``; returns its files (written or kept)."""
    links = install_links(InstallRequest(EXAMPLE_ARGV, EXAMPLE_NAME))
    outputs = [
        {
            "client": client,
            "title": CLIENT_TITLES[client],
            "text": links.outputs[client],
            "link": client in LINK_CLIENTS,
            "note": links.notes.get(client, ""),
        }
        for client in CLIENTS
    ]
    page = env.get_template("install.html").render(
        **context,
        outputs=outputs,
        example_command=" ".join(EXAMPLE_ARGV),
        example_name=EXAMPLE_NAME,
        uvx_spec=f"toolpin@{__version__}",
        page_path="install/",
    )
    root = Path(out_dir) / "install"
    files = [root / "index.html", root / "install.js"]
    for path, data in zip(files, (page.encode("utf-8"), install_script()), strict=True):
        if write_if_changed(path, data) and on_write is not None:
            on_write(path)
    return files
