"""Fixtures for the site tests: a built sample site, served over loopback, and Chromium."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from site_helpers import NOW, sample_log, serve

from toolpin.publog.note import Verifier
from toolpin.site.build import build_site, parse_now

ARTIFACTS = Path(os.environ.get("TOOLPIN_TEST_ARTIFACTS", "test-artifacts")) / "site"


@pytest.fixture(scope="session")
def sample_site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("site")
    writer, ids = sample_log(root / "log")
    out = root / "out"
    build_site(root / "log", Verifier.from_text(writer.vkey), out, now=parse_now(NOW))
    return {"root": root, "log": root / "log", "out": out, "ids": ids, "vkey": writer.vkey}


@pytest.fixture(scope="session")
def served(sample_site: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server, url = serve(sample_site["out"])
    yield url
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from tests.pages import chromium  # it fails the test when Chromium is missing

    with chromium() as browser:
        yield browser


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def copy_site(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst
