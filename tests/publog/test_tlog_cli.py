"""`toolpin log keygen|verify|prove|verify-proof` through click and as a real subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tlog_helpers import SRC, make_entries

import toolpin.cli
from toolpin.errors import LogError, ToolpinError
from toolpin.publog.keys import load_signer
from toolpin.publog.tiles import TileLog

toolpin.cli._register_commands()


def _run(*args: str) -> Result:
    return CliRunner().invoke(toolpin.cli.cli, list(args), standalone_mode=False)


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, str]:
    """A key made by `keygen`, a 300-entry log signed with it, the verifier key text."""
    key = tmp_path / "log.key"
    result = _run("log", "keygen", "--origin", "log.example/cli", "--out", str(key))
    assert result.exception is None, result.output
    assert result.return_value == 0
    vkey = result.output.strip().splitlines()[-1]
    log = TileLog.open(tmp_path / "log")
    log.append(make_entries(300), load_signer(key))
    return tmp_path / "log", key, vkey


def test_keygen_prints_the_verifier_key_last(setup: tuple[Path, Path, str]) -> None:
    _, key, vkey = setup
    assert vkey.startswith("log.example/cli+")
    assert load_signer(key).verifier.text == vkey
    result = _run("log", "keygen", "--origin", "log.example/cli", "--out", str(key))
    assert isinstance(result.exception, LogError) and "already exists" in str(result.exception)


def test_verify_good_bad_and_unusable(setup: tuple[Path, Path, str], tmp_path: Path) -> None:
    log_dir, _, vkey = setup
    ok = _run("log", "verify", "--log", str(log_dir), "--vkey", vkey)
    assert ok.return_value == 0 and ok.output.startswith("ok: verified 300 entries")
    vkey_file = tmp_path / "vkey.txt"
    vkey_file.write_text("some heading\n" + vkey + "\n\n")
    assert _run("log", "verify", "--log", str(log_dir), "--vkey", str(vkey_file)).return_value == 0
    as_json = _run("log", "verify", "--log", str(log_dir), "--vkey", vkey, "--json")
    report = json.loads(as_json.output)
    assert report["ok"] is True and report["size"] == 300 and as_json.return_value == 0
    tile = log_dir / "tile/0/000"
    tile.write_bytes(b"\x00" + tile.read_bytes()[1:])
    bad = _run("log", "verify", "--log", str(log_dir), "--vkey", vkey)
    assert bad.return_value == 1 and bad.output.startswith("FAILED: tile/0/000")
    unusable = _run("log", "verify", "--log", str(log_dir), "--vkey", "nonsense+key")
    assert isinstance(unusable.exception, ToolpinError) and unusable.exception.exit_code == 2
    missing = _run("log", "verify", "--log", str(tmp_path / "none"), "--vkey", vkey)
    assert isinstance(missing.exception, LogError) and missing.exception.exit_code == 2


def test_verify_since_detects_a_rollback(setup: tuple[Path, Path, str], tmp_path: Path) -> None:
    log_dir, key, vkey = setup
    shutil.copytree(log_dir, tmp_path / "backup")
    TileLog.open(log_dir).append(make_entries(10, 300), load_signer(key))
    kept = tmp_path / "kept-checkpoint"
    shutil.copy(log_dir / "checkpoint", kept)
    args = ["log", "verify", "--log", str(log_dir), "--vkey", vkey, "--since", str(kept)]
    assert _run(*args).return_value == 0
    shutil.rmtree(log_dir)
    shutil.copytree(tmp_path / "backup", log_dir)
    rolled = _run(*args)
    assert rolled.return_value == 1 and "rolled back" in rolled.output


def test_prove_and_verify_proof(setup: tuple[Path, Path, str], tmp_path: Path) -> None:
    log_dir, _, vkey = setup
    proved = _run("log", "prove", "--log", str(log_dir), "--entry", "123", "--vkey", vkey)
    assert proved.return_value == 0 and proved.output.startswith("c2sp.org/tlog-proof@v1\n")
    proof = tmp_path / "e123.tlog-proof"
    proof.write_text(proved.output)
    entry = tmp_path / "entry"
    entry.write_bytes(make_entries(300)[123])
    ok = _run(
        "log", "verify-proof", "--vkey", vkey, "--proof", str(proof), "--entry-file", str(entry)
    )
    assert ok.return_value == 0 and "entry 123 is in log.example/cli at tree size 300" in ok.output
    from_log = _run(
        "log", "verify-proof", "--vkey", vkey, "--proof", str(proof), "--log", str(log_dir)
    )
    assert from_log.return_value == 0
    entry.write_bytes(make_entries(300)[124])
    bad = _run(
        "log", "verify-proof", "--vkey", vkey, "--proof", str(proof), "--entry-file", str(entry)
    )
    assert bad.return_value == 1 and bad.output.startswith("FAILED:")
    proof.write_text("garbage")
    bad = _run(
        "log", "verify-proof", "--vkey", vkey, "--proof", str(proof), "--entry-file", str(entry)
    )
    assert bad.return_value == 1 and "malformed" in bad.output
    both = _run("log", "verify-proof", "--vkey", vkey, "--proof", str(proof))
    assert both.exception is not None
    beyond = _run("log", "prove", "--log", str(log_dir), "--entry", "300")
    assert isinstance(beyond.exception, LogError)


def _toolpin(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC)
    env.pop("TOOLPIN_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "toolpin", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_end_to_end_as_a_subprocess(tmp_path: Path) -> None:
    key = tmp_path / "log.key"
    made = _toolpin("log", "keygen", "--origin", "log.example/e2e", "--out", str(key))
    assert made.returncode == 0, made.stderr
    vkey = made.stdout.strip().splitlines()[-1]
    again = _toolpin("log", "keygen", "--origin", "x.example/y", "--out", str(key))
    assert again.returncode == 2 and "already exists" in again.stderr
    log_dir = tmp_path / "log"
    TileLog.open(log_dir).append(make_entries(40), load_signer(key))

    verified = _toolpin("log", "verify", "--log", str(log_dir), "--vkey", vkey)
    assert verified.returncode == 0 and "ok: verified 40 entries" in verified.stdout

    proved = _toolpin("log", "prove", "--log", str(log_dir), "--entry", "39")
    assert proved.returncode == 0, proved.stderr
    proof = tmp_path / "p.tlog-proof"
    proof.write_text(proved.stdout)
    checked = _toolpin(
        "log", "verify-proof", "--vkey", vkey, "--proof", str(proof), "--log", str(log_dir)
    )
    assert checked.returncode == 0, checked.stderr

    bundle = log_dir / "tile/entries/000.p/40"
    bundle.write_bytes(bundle.read_bytes()[:-1] + b"!")
    failed = _toolpin("log", "verify", "--log", str(log_dir), "--vkey", vkey)
    assert failed.returncode == 1 and failed.stdout.startswith("FAILED:")

    unusable = _toolpin("log", "verify", "--log", str(log_dir), "--vkey", "bad+key+here")
    assert unusable.returncode == 2
    assert unusable.stderr.startswith("toolpin: unusable verifier key")
    assert "Traceback" not in unusable.stderr

    no_log = _toolpin("log", "prove", "--log", str(tmp_path / "nothing"), "--entry", "0")
    assert no_log.returncode == 2 and no_log.stderr.startswith("toolpin: ")

    usage = _toolpin("log", "verify", "--log", str(log_dir))
    assert usage.returncode == 2


def test_the_log_command_module_is_light_at_import() -> None:
    code = (
        "import sys, toolpin.cli; toolpin.cli._register_commands(); "
        "heavy = [m for m in ('cryptography', 'rfc8785', 'toolpin.publog.tiles', "
        "'toolpin.publog.note', 'rich', 'filelock') if m in sys.modules]; "
        "assert 'log' in toolpin.cli.cli.commands; print(heavy)"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
