"""Interop: Go's reference code (golang.org/x/mod/sumdb/note and sumdb/tlog) checks a log
toolpin wrote: the checkpoint's signature, the tree hash of every entry, every hash tile
(Go's tile paths mapped to C2SP's), and toolpin's inclusion and consistency proofs.

The verifier is ``tests/publog/go/tlogverify`` (independent of toolpin), built with
Debian's ``golang-go`` and ``golang-golang-x-mod-dev`` (``.ci/run`` installs them).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.shared import build_go
from tlog_helpers import make_entries

import toolpin.cli
from toolpin.publog.keys import generate_key, load_signer
from toolpin.publog.tiles import TileLog

GO_SOURCE = Path(__file__).parent / "go" / "tlogverify"


@pytest.fixture(scope="session")
def go_verifier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Go verifier, built once per run (every worker shares it)."""
    sumdb = "golang.org/x/mod/sumdb"
    return build_go(tmp_path_factory, GO_SOURCE, f"{sumdb}/note", f"{sumdb}/tlog")


def _cli(*args: str) -> str:
    toolpin.cli._register_commands()
    result = CliRunner().invoke(toolpin.cli.cli, list(args), standalone_mode=False)
    assert result.exception is None and result.return_value == 0, result.output
    return result.output


def test_go_reference_code_verifies_a_toolpin_log_and_its_proofs(
    go_verifier: Path, tmp_path: Path
) -> None:
    key = tmp_path / "log.key"
    vkey = generate_key("log.example/go-interop", key)
    signer = load_signer(key)
    log_dir = tmp_path / "log"
    log = TileLog.open(log_dir)
    log.append(make_entries(70), signer)
    kept = tmp_path / "kept-70"
    shutil.copy(log_dir / "checkpoint", kept)
    log.append(make_entries(600, 70), signer)  # full and partial tiles at levels 0 and 1
    inclusion = tmp_path / "e300.proof"
    inclusion.write_text(_cli("log", "prove", "--log", str(log_dir), "--entry", "300"))
    consistency = tmp_path / "since-70.proof"
    consistency.write_text(_cli("log", "prove", "--log", str(log_dir), "--since", str(kept)))

    done = subprocess.run(
        [str(go_verifier), str(log_dir), vkey, str(inclusion), str(consistency)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "ok checkpoint signed by log.example/go-interop: size 670",
        "ok tree hash of 670 entries matches the root",
        "ok every entry is proven from the hash tiles",
        "ok inclusion proof of entry 300 at size 670",
        "ok consistency proof from size 70 to 670",
    ]

    tile = log_dir / "tile" / "0" / "001"
    tile.write_bytes(bytes([tile.read_bytes()[0] ^ 1]) + tile.read_bytes()[1:])
    tampered = subprocess.run(
        [str(go_verifier), str(log_dir), vkey], capture_output=True, text=True, timeout=120
    )
    assert tampered.returncode == 1 and "FAILED" in tampered.stderr
