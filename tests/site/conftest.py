"""Fixtures for the site tests: a built sample site, served over loopback, and Chromium."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from site_helpers import NOW, sample_log  # noqa: E402

from toolpin.publog.note import Verifier  # noqa: E402
from toolpin.site.build import build_site, parse_now  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("TOOLPIN_TEST_ARTIFACTS", "test-artifacts")) / "site"
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-sync",
    "--no-first-run",
    "--metrics-recording-only",
]


@pytest.fixture(scope="session")
def sample_site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("site")
    writer, ids = sample_log(root / "log")
    out = root / "out"
    build_site(root / "log", Verifier.from_text(writer.vkey), out, now=parse_now(NOW))
    return {"root": root, "log": root / "log", "out": out, "ids": ids, "vkey": writer.vkey}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


def serve(folder: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Serve ``folder`` on 127.0.0.1 (a random port) from a daemon thread."""
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


@pytest.fixture(scope="session")
def served(sample_site: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server, url = serve(sample_site["out"])
    yield url
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail(
            "/usr/bin/chromium is missing: apt-get install -y chromium (.ci/run does this)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def copy_site(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst
