"""Fixtures for the crawler tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from crawl_helpers import ORIGIN, FakeAPI, LogKey

from toolpin.publog.keys import generate_key, load_signer


@pytest.fixture(autouse=True)
def private_toolpin_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Crawls keep their shared package caches under ``$TOOLPIN_HOME``: one per test."""
    home = tmp_path / "toolpin-home"
    monkeypatch.setenv("TOOLPIN_HOME", str(home))
    return home


@pytest.fixture
def log_key(tmp_path: Path) -> LogKey:
    keys = tmp_path / "keys"
    keys.mkdir()
    path = keys / "log.key"
    vkey = generate_key(ORIGIN, path)
    return LogKey(path, vkey, load_signer(path))


@pytest.fixture
def fake_api() -> Iterator[FakeAPI]:
    api = FakeAPI().start()
    try:
        yield api
    finally:
        api.stop()
