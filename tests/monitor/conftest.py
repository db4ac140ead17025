"""Fixtures for the monitor tests: real logs written by the project's own writer, served
from a folder over loopback, and witnesses with keys generated here."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "evidence"))
sys.path.insert(0, str(Path(__file__).parent.parent / "site"))

from evidence_helpers import Served, serve_folder


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    folder = tmp_path / "www"
    folder.mkdir()
    served = serve_folder(folder)
    yield served
    served.close()
