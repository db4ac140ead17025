"""`toolpin log prove --since OLD` prints a consistency proof that `verify-proof` checks."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tlog_helpers import make_entries

import toolpin.cli
from toolpin.errors import LogError
from toolpin.publog.keys import generate_key, load_signer
from toolpin.publog.proof import CONSISTENCY_HEADER, parse_consistency_proof
from toolpin.publog.tiles import TileLog

toolpin.cli._register_commands()


def _run(*args: str) -> Result:
    return CliRunner().invoke(toolpin.cli.cli, list(args), standalone_mode=False)


@pytest.fixture
def grown(tmp_path: Path) -> tuple[Path, Path, Path, str]:
    """A log of 300 entries whose checkpoint at 37 entries was kept; the key; the vkey."""
    key = tmp_path / "log.key"
    vkey = generate_key("log.example/consistency", key)
    signer = load_signer(key)
    log_dir = tmp_path / "log"
    log = TileLog.open(log_dir)
    log.append(make_entries(37), signer)
    kept = tmp_path / "kept-37"
    shutil.copy(log_dir / "checkpoint", kept)
    shutil.copytree(log_dir, tmp_path / "backup-37")
    log.append(make_entries(263, 37), signer)
    return log_dir, key, kept, vkey


def test_prove_since_round_trips_through_verify_proof(
    grown: tuple[Path, Path, Path, str], tmp_path: Path
) -> None:
    log_dir, _, kept, vkey = grown
    proved = _run("log", "prove", "--log", str(log_dir), "--since", str(kept), "--vkey", vkey)
    assert proved.exception is None and proved.return_value == 0
    assert proved.output.startswith(CONSISTENCY_HEADER + "\n")
    parsed = parse_consistency_proof(proved.output)
    assert parsed.old_note == kept.read_text() and parsed.path
    proof = tmp_path / "since-37.proof"
    proof.write_text(proved.output)
    ok = _run("log", "verify-proof", "--vkey", vkey, "--proof", str(proof), "--since", str(kept))
    assert ok.return_value == 0, ok.output
    assert ok.output == (
        "ok: log.example/consistency at tree size 300 is consistent with tree size 37\n"
    )
    without_kept = _run("log", "verify-proof", "--vkey", vkey, "--proof", str(proof))
    assert without_kept.return_value == 0


def test_a_tampered_consistency_proof_fails(
    grown: tuple[Path, Path, Path, str], tmp_path: Path
) -> None:
    log_dir, _, kept, vkey = grown
    text = _run("log", "prove", "--log", str(log_dir), "--since", str(kept)).output
    lines = text.split("\n")
    flipped = bytearray(base64.b64decode(lines[2]))
    flipped[0] ^= 1
    lines[2] = base64.b64encode(bytes(flipped)).decode()
    proof = tmp_path / "bad.proof"
    proof.write_text("\n".join(lines))
    bad = _run("log", "verify-proof", "--vkey", vkey, "--proof", str(proof))
    assert bad.return_value == 1
    assert bad.output.startswith("FAILED: the consistency proof does not lead")
    proof.write_text(text)
    other = tmp_path / "other-kept"
    other.write_text((log_dir / "checkpoint").read_text())
    mismatch = _run(
        "log", "verify-proof", "--vkey", vkey, "--proof", str(proof), "--since", str(other)
    )
    assert mismatch.return_value == 1 and "another checkpoint" in mismatch.output
    entry = _run(
        "log", "verify-proof", "--vkey", vkey, "--proof", str(proof), "--log", str(log_dir)
    )
    assert entry.exception is not None and "takes no" in str(entry.exception)


def test_prove_since_refuses_a_rolled_back_or_forked_log(
    grown: tuple[Path, Path, Path, str], tmp_path: Path
) -> None:
    log_dir, key, _, vkey = grown
    newer = tmp_path / "kept-300"
    shutil.copy(log_dir / "checkpoint", newer)
    shutil.rmtree(log_dir)
    shutil.copytree(tmp_path / "backup-37", log_dir)
    rolled = _run("log", "prove", "--log", str(log_dir), "--since", str(newer), "--vkey", vkey)
    assert isinstance(rolled.exception, LogError) and "rolled back" in str(rolled.exception)
    TileLog.open(log_dir).append(make_entries(300, 1000), load_signer(key))
    forked = _run("log", "prove", "--log", str(log_dir), "--since", str(newer), "--vkey", vkey)
    assert isinstance(forked.exception, LogError) and "forked" in str(forked.exception)


def test_prove_needs_exactly_one_of_entry_and_since(grown: tuple[Path, Path, Path, str]) -> None:
    log_dir, _, kept, _ = grown
    neither = _run("log", "prove", "--log", str(log_dir))
    both = _run("log", "prove", "--log", str(log_dir), "--entry", "1", "--since", str(kept))
    for result in (neither, both):
        assert result.exception is not None and "exactly one" in str(result.exception)
