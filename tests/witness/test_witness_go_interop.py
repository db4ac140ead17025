"""Interop: a checkpoint cosigned by toolpin witnesses, checked by Go code written from
the specifications (``tests/witness/go/cosigverify``, independent of toolpin):
``golang.org/x/mod/sumdb/note`` opens it with the log's key and reports the cosignature
lines as signatures of unknown keys; ``crypto/ed25519`` verifies each cosignature/v1
over ``cosignature/v1\\ntime <t>\\n`` + the note text. Go's note itself refuses a type
0x04 key: it covers the signed note, not cosignatures (``docs/witness.md``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.shared import build_go
from witness_helpers import entries, log_signer, make_witness, serving, witness_signer

from toolpin.publog.tiles import TileLog
from toolpin.witness.push import WitnessTarget, push_checkpoint

GO_SOURCE = Path(__file__).parent / "go" / "cosigverify"


@pytest.fixture(scope="session")
def go_cosigverify(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_go(tmp_path_factory, GO_SOURCE, "golang.org/x/mod/sumdb/note")


def test_go_note_and_ed25519_accept_the_cosigned_checkpoint(
    go_cosigverify: Path, tmp_path: Path
) -> None:
    log_dir = tmp_path / "log"
    TileLog.open(log_dir).append(entries(33), log_signer())
    w1, w2 = witness_signer(), witness_signer("w2", "witness.example/w2")
    with (
        serving(make_witness(tmp_path / "s1")) as one,
        serving(make_witness(tmp_path / "s2", signer=w2)) as two,
    ):
        targets = [WitnessTarget(w1.key, one.url), WitnessTarget(w2.key, two.url)]
        outcome = push_checkpoint(log_dir, log_signer().verifier, targets)
    assert outcome.published and outcome.cosigned == 2
    done = subprocess.run(
        [str(go_cosigverify), str(log_dir / "checkpoint"), log_signer().verifier.text,
         w1.key.text, w2.key.text],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "ok log log.example/witnessed (2 unverified signature lines)"
    assert lines.count("note: unknown verifier algorithm") == 2
    times = {r.witness: r.timestamp for r in outcome.results}
    assert f"ok witness {w1.name} {times[w1.name]}" in lines
    assert f"ok witness {w2.name} {times[w2.name]}" in lines


def test_go_refuses_a_cosignature_over_another_body(go_cosigverify: Path, tmp_path: Path) -> None:
    """The Go check can fail: a cosignature moved onto another checkpoint is refused."""
    log_dir = tmp_path / "log"
    log = TileLog.open(log_dir)
    log.append(entries(5), log_signer())
    w1 = witness_signer()
    with serving(make_witness(tmp_path / "s1")) as one:
        push_checkpoint(log_dir, log_signer().verifier, [WitnessTarget(w1.key, one.url)])
    cosig = (log_dir / "checkpoint").read_text().splitlines()[-1] + "\n"
    log.append(entries(1, start=5), log_signer())
    moved = tmp_path / "moved"
    moved.write_text((log_dir / "checkpoint").read_text() + cosig)
    done = subprocess.run(
        [str(go_cosigverify), str(moved), log_signer().verifier.text, w1.key.text],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1 and "does not verify" in done.stderr
