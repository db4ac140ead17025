"""Interop with another C2SP witness implementation: PyPI's ``aics-witness`` (a witness
in Python, SQLite state) and its ``aics-tlog`` verifier, installed in a Python 3.12 venv
(they need 3.12; toolpin's own environment is 3.11).

* ``toolpin log witness push`` gets a cosignature from a running ``aics-witness`` (our
  request bytes, its answer), publishes it, and toolpin's verifier checks it; the proof of
  the next push starts from the size it cosigned;
* ``aics-tlog``'s ``verify_checkpoint`` accepts a checkpoint cosigned by toolpin witnesses
  with a quorum of two, and refuses it when one cosignature is damaged.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.shared import build_once
from witness_helpers import entries, log_signer, make_witness, serving, witness_signer

from toolpin.publog.cosignature import parse_witness_vkey, verify_cosignatures
from toolpin.publog.tiles import TileLog
from toolpin.witness.push import WitnessTarget, push_checkpoint

pytestmark = pytest.mark.registries
AICS = ("aics-witness==0.1.0", "aics-tlog==0.2.1")
CHECK = """
import sys
from aics_tlog.note import parse_note, parse_vkey
from aics_tlog.checkpoint import verify_checkpoint
note = parse_note(open(sys.argv[1], "rb").read())
wits = [parse_vkey(v) for v in sys.argv[3:]]
res = verify_checkpoint(note, parse_vkey(sys.argv[2]), wits, quorum=len(wits))
print("ok" if res.ok else "FAILED", res.size, sorted(res.timestamps.items()))
sys.exit(0 if res.ok else 1)
"""


def _python312() -> Path | None:
    """A CPython 3.12 or newer next to this one (pyenv), or on PATH."""
    import shutil

    versions = Path(sys.base_prefix).parent
    for candidate in sorted(versions.glob("3.1[2-9]*/bin/python3"), reverse=True):
        return candidate
    found = shutil.which("python3.12") or shutil.which("python3.13")
    return Path(found) if found else None


@pytest.fixture(scope="session")
def aics(tmp_path_factory: pytest.TempPathFactory) -> Path:
    python = _python312()
    if python is None:
        pytest.skip("no Python 3.12 on this machine for aics-witness")

    def build(out: Path) -> None:
        # A fixture, not what is tested: the test extra's uv makes the venv and installs
        # the peer (pip's own start and resolution cost about ten times the CPU).
        uv = str(Path(sys.executable).parent / "uv")
        venv = out / "venv"
        subprocess.run(
            [uv, "venv", "--quiet", "--python", str(python), str(venv)],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        done = subprocess.run(
            [uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), *AICS],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]

    return build_once(tmp_path_factory, "aics-witness-venv", build) / "venv" / "bin" / "python"


def _aics(python: Path, *args: str, cwd: Path) -> str:
    done = subprocess.run(
        [str(python), "-m", "aics_witness", *args], cwd=cwd, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_push_to_aics_witness_and_verify_its_cosignature(aics: Path, tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    TileLog.open(log_dir).append(entries(12), log_signer())
    home = tmp_path / "aics"
    home.mkdir()
    port = _free_port()
    vkey_text = _aics(
        aics, "init", "-c", "witness.json", "--name", "witness.aics.example/w1",
        "--listen", f"127.0.0.1:{port}", cwd=home,
    ).strip().splitlines()[-1]  # fmt: skip
    key = parse_witness_vkey(vkey_text)
    _aics(aics, "add-log", "-c", "witness.json", "--origin", log_signer().name,
          "--vkey", log_signer().verifier.text, cwd=home)  # fmt: skip
    server = subprocess.Popen(
        [str(aics), "-m", "aics_witness", "serve", "-c", "witness.json"], cwd=home,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stderr is not None
        deadline = time.monotonic() + 60
        while "listening on" not in server.stderr.readline():
            assert time.monotonic() < deadline and server.poll() is None, (
                "aics-witness did not start"
            )
        url = f"http://127.0.0.1:{port}"
        target = [WitnessTarget(key, url)]
        memory = tmp_path / "push.json"
        first = push_checkpoint(log_dir, log_signer().verifier, target, state=memory)
        assert first.exit_code == 0 and first.published, first.results
        cosigned = (log_dir / "checkpoint").read_bytes()
        assert set(verify_cosignatures(cosigned, [key])) == {key.name}
        log = TileLog.open(log_dir)
        log.append(entries(30, start=12), log_signer())
        second = push_checkpoint(log_dir, log_signer().verifier, target, state=memory)
        assert second.exit_code == 0 and second.results[0].old_size == 12
        # without the remembered size: aics-witness's 409 names it
        third = push_checkpoint(log_dir, log_signer().verifier, target, state=None)
        assert third.exit_code == 0 and third.results[0].old_size == 42
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_aics_tlog_verifies_toolpin_cosignatures(aics: Path, tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    TileLog.open(log_dir).append(entries(9), log_signer())
    w1, w2 = witness_signer(), witness_signer("w2", "witness.example/w2")
    with (
        serving(make_witness(tmp_path / "s1")) as one,
        serving(make_witness(tmp_path / "s2", signer=w2)) as two,
    ):
        targets = [WitnessTarget(w1.key, one.url), WitnessTarget(w2.key, two.url)]
        assert push_checkpoint(log_dir, log_signer().verifier, targets).cosigned == 2
    script = tmp_path / "check.py"
    script.write_text(CHECK)
    args = [str(aics), str(script), str(log_dir / "checkpoint"), log_signer().verifier.text,
            w1.key.text, w2.key.text]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("ok 9 "), done.stdout + done.stderr
    assert w1.name in done.stdout and w2.name in done.stdout
    # the check can fail: one damaged cosignature refuses the checkpoint
    lines = (log_dir / "checkpoint").read_text().splitlines(keepends=True)
    last = lines[-1]
    flipped = last[:-10] + ("A" if last[-10] != "A" else "B") + last[-9:]  # in the signature
    bad = tmp_path / "bad"
    bad.write_text("".join(lines[:-1]) + flipped)
    args[2] = str(bad)
    assert subprocess.run(args, capture_output=True, text=True, timeout=60).returncode == 1
