"""The two writers of a log, ``log crawl`` and ``log append --from``, refuse the same
places to write (a log path that is a file, a state file inside the log) and wait for the
same one-writer lock, each with its own one-line reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolpin.crawl.runner import CrawlOptions, crawl, crawl_lock_path
from toolpin.crawl.sequence import append_observations
from toolpin.errors import InputError, LogError
from toolpin.publog.note import Signer
from toolpin.util.fs import locked

ORIGIN = "example.com/guard-log"


@pytest.fixture
def signer() -> Signer:
    return Signer.generate(ORIGIN)


def _crawl(log_dir: Path, signer: Signer, **options: object) -> None:
    crawl(CrawlOptions(log_dir=log_dir, signer=signer, **options))  # type: ignore[arg-type]


def test_both_writers_wait_for_the_one_lock(tmp_path: Path, signer: Signer) -> None:
    log_dir = tmp_path / "log"
    state = tmp_path / "state.sqlite"
    with locked(crawl_lock_path(log_dir), timeout=1.0):
        with pytest.raises(LogError) as crawled:
            _crawl(log_dir, signer, state_path=state, lock_timeout=0.05)
        with pytest.raises(LogError) as appended:
            append_observations(log_dir, signer, [], state_path=state, lock_timeout=0.05)
    assert crawled.value.message == f"another crawl of {log_dir} is still running"
    assert crawled.value.advice == "Wait for it to finish (crawls of one log are serialised)."
    assert appended.value.message == f"a crawl or append of {log_dir} is still running"
    assert appended.value.advice == "Wait for it to finish (writers of one log are serialised)."
    assert not log_dir.exists() and not state.exists()  # nothing was written


@pytest.mark.parametrize("writer", ["crawl", "append"])
def test_both_writers_refuse_the_same_places(tmp_path: Path, signer: Signer, writer: str) -> None:
    def run(log_dir: Path, state: Path | None) -> str:
        with pytest.raises(InputError) as refused:
            if writer == "crawl":
                _crawl(log_dir, signer, state_path=state)
            else:
                append_observations(log_dir, signer, [], state_path=state)
        return refused.value.message

    a_file = tmp_path / "a-file"
    a_file.write_text("not a log\n")
    assert run(a_file, None) == f"{a_file} is not a directory"
    orphan = tmp_path / "no-such-parent" / "log"
    assert run(orphan, None) == f"the parent directory of {orphan} does not exist"
    log_dir = tmp_path / "log"
    assert run(log_dir, log_dir / "state.sqlite") == (
        "the crawl state must not live inside the log directory (it would be published)"
    )
    assert not log_dir.exists()
