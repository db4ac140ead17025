"""Real processes: concurrent appends serialised by the lock; SIGKILL at every point of an
append leaves a log that verifies at its last checkpoint and can be appended to again."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tlog_helpers import SRC, make_entries

from toolpin.errors import LogError
from toolpin.publog.entries import decode_entry
from toolpin.publog.keys import generate_key, load_signer
from toolpin.publog.note import Verifier
from toolpin.publog.tiles import TileLog
from toolpin.publog.verify import verify_log

WORKER = Path(__file__).with_name("tlog_worker.py")

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL and fork semantics")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC)
    return env


def _worker(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def keyed(tmp_path: Path) -> tuple[Path, Path, Verifier]:
    key = tmp_path / "keys" / "log.key"
    key.parent.mkdir()
    vkey = generate_key("log.example/toolpin-test", key)
    return tmp_path / "log", key, Verifier.from_text(vkey)


def test_concurrent_appends_from_two_processes_are_serialised(
    keyed: tuple[Path, Path, Verifier],
) -> None:
    log_dir, key, verifier = keyed
    workers = [_worker(str(log_dir), str(key), "append", tag, "15", "20") for tag in "ab"]
    for w in workers:
        _, err = w.communicate(timeout=120)
        assert w.returncode == 0, err
    result = verify_log(log_dir, verifier)
    assert result.ok, result.reason
    assert result.checkpoint is not None and result.checkpoint.size == 600
    records = [decode_entry(e) for e in TileLog.open(log_dir).iter_entries()]
    for tag in "ab":
        assert sorted(r["i"] for r in records if r["tag"] == tag) == list(range(300))


def _count_writes(log_dir: Path, key: Path) -> int:
    """How many file writes one append of 300 entries onto 250 makes (no kill)."""
    probe = log_dir.parent / "probe"
    shutil.copytree(log_dir, probe)
    w = _worker(str(probe), str(key), "kill-at", "0", "new", "250", "300")
    out, err = w.communicate(timeout=60)
    assert w.returncode == 0, err
    shutil.rmtree(probe)
    return int(out.split()[2])


def test_sigkill_at_every_write_of_an_append(keyed: tuple[Path, Path, Verifier]) -> None:
    log_dir, key, verifier = keyed
    signer = load_signer(key)
    base = log_dir.parent / "base"
    TileLog.open(base).append(make_entries(250), signer)
    total = _count_writes(base, key)
    assert total >= 6  # bundles and tiles of two levels, then the checkpoint
    refused = 0
    for point in range(1, total + 1):
        shutil.rmtree(log_dir, ignore_errors=True)
        shutil.copytree(base, log_dir)
        w = _worker(str(log_dir), str(key), "kill-at", str(point), "new", "250", "300")
        w.communicate(timeout=60)
        assert w.returncode == -signal.SIGKILL, point
        result = verify_log(log_dir, verifier)
        assert result.ok, (point, result.reason)
        assert result.checkpoint is not None and result.checkpoint.size == 250
        log = TileLog.open(log_dir, verifier)
        # other entries: fine unless a full file of the killed append is already there
        try:
            log.append(make_entries(300, 250, tag="other"), signer)
        except LogError as exc:
            assert "never rewritten" in exc.message, point
            refused += 1
            after = verify_log(log_dir, verifier)
            assert after.ok and after.checkpoint is not None and after.checkpoint.size == 250
            # retrying the interrupted batch itself always completes
            log.append(make_entries(300, 250, tag="new"), signer)
        result = verify_log(log_dir, verifier)
        assert result.ok and result.checkpoint is not None, (point, result.reason)
        assert result.checkpoint.size == 550
    # both outcomes were exercised: killed before and after a full file was written
    assert 0 < refused < total


def test_sigkill_at_random_moments_while_appending(keyed: tuple[Path, Path, Verifier]) -> None:
    log_dir, key, verifier = keyed
    sizes = []
    for round_number in range(3):
        w = _worker(str(log_dir), str(key), "loop", f"r{round_number}", "37")
        time.sleep(0.5 + 0.2 * round_number)
        w.send_signal(signal.SIGKILL)
        w.communicate(timeout=60)
        result = verify_log(log_dir, verifier)
        assert result.ok, (round_number, result.reason)
        assert result.checkpoint is not None
        sizes.append(result.checkpoint.size)
        assert result.checkpoint.size % 37 == 0
    assert sizes == sorted(sizes) and sizes[-1] > 0
