"""Fixtures for the public log engine tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tlog_helpers import make_entries, seeded_signer

from toolpin.publog.note import Signer
from toolpin.publog.tiles import TileLog


@pytest.fixture
def signer() -> Signer:
    return seeded_signer()


@pytest.fixture
def other_signer() -> Signer:
    return seeded_signer(label="two")


@pytest.fixture
def build_log(tmp_path: Path, signer: Signer) -> Callable[..., TileLog]:
    """build_log(*batch_sizes, name="log") -> a log with those batches appended."""

    def build(*batches: int, name: str = "log", tag: str = "t") -> TileLog:
        log = TileLog.open(tmp_path / name)
        done = 0
        for size in batches:
            log.append(make_entries(size, done, tag), signer)
            done += size
        return log

    return build
