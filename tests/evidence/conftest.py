"""Fixtures for the evidence tests: real logs and sites built by the project's own code,
served from a folder over loopback (the site folder as published)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "site"))

from evidence_helpers import Served, serve_folder


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """An HTTP server on 127.0.0.1 whose folder a test fills (and swaps) at will."""
    folder = tmp_path / "www"
    folder.mkdir()
    served = serve_folder(folder)
    yield served
    served.close()
