"""``toolpin log witness keygen|serve`` and ``log crawl --witness`` from the command line."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from witness_helpers import env, log_signer, logs_text, serving, witness_signer

import toolpin.cli
from toolpin.publog.cosignature import parse_witness_vkey, verify_cosignatures
from toolpin.publog.keys import generate_key
from toolpin.witness.cosigner import Witness
from toolpin.witness.keys import load_witness_signer
from toolpin.witness.logs import parse_known_logs
from toolpin.witness.state import WitnessState


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolpin", *args],
        env=env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_keygen_writes_a_private_key_and_prints_its_vkey(tmp_path: Path) -> None:
    out = tmp_path / "keys" / "w.key"
    done = _run("log", "witness", "keygen", "--name", "witness.example/w9", "--out", str(out))
    assert done.returncode == 0, done.stderr
    vkey = parse_witness_vkey(done.stdout.splitlines()[-1])
    assert vkey == load_witness_signer(out).key and vkey.name == "witness.example/w9"
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    again = _run("log", "witness", "keygen", "--name", "witness.example/w9", "--out", str(out))
    assert again.returncode == 2 and "refusing to overwrite" in again.stderr
    bad = _run("log", "witness", "keygen", "--name", "a b", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    # a log key is not a witness key, and the other way round
    generate_key("log.example/l", tmp_path / "log.key")
    logs = tmp_path / "logs"
    logs.write_text(logs_text(log_signer()))
    wrong = _run("log", "witness", "serve", "--key", str(tmp_path / "log.key"), "--logs", str(logs))
    assert wrong.returncode == 2 and "not a usable witness key" in wrong.stderr


def test_serve_refuses_unusable_inputs_with_one_line(tmp_path: Path) -> None:
    key = tmp_path / "w.key"
    key.write_text(witness_signer().text + "\n")
    logs = tmp_path / "logs"
    cases: list[tuple[str, list[str], str]] = [
        ("log not-a-key\n", [], "line 1"),
        ("quorum any\n", [], "names no log"),
        ("frobnicate x\n", [], "line 1: expected `log <vkey> [url]`"),
        (logs_text(log_signer()), ["--listen", "0.0.0.0:0"], "not a loopback address"),
        (logs_text(log_signer()), ["--listen", "nonsense"], "HOST:PORT"),
    ]
    for text, extra, expected in cases:
        logs.write_text(text)
        done = _run(
            "log", "witness", "serve", "--key", str(key), "--logs", str(logs),
            "--state", str(tmp_path / "state"), *extra,
        )  # fmt: skip
        assert done.returncode == 2 and expected in done.stderr, (text, done.stderr)
        assert "Traceback" not in done.stderr
    logs.write_text(logs_text(log_signer()))
    fifo = tmp_path / "state-file"
    fifo.write_text("")
    done = _run(
        "log", "witness", "serve", "--key", str(key), "--logs", str(logs), "--state", str(fifo)
    )
    assert done.returncode == 2 and "not a directory" in done.stderr


def test_crawl_with_witnesses_publishes_a_cosigned_checkpoint(tmp_path: Path) -> None:
    key = tmp_path / "keys" / "log.key"
    vkey = generate_key("log.example/crawled", key)
    servers = tmp_path / "servers.json"
    demo = {"command": sys.executable, "args": ["-m", "toolpin", "demo-server"], "env": env()}
    servers.write_text(json.dumps({"mcpServers": {"demo": demo}}))
    w1 = witness_signer()
    witness = Witness(w1, parse_known_logs(f"log {vkey}\n"), WitnessState.open(tmp_path / "s"))
    toolpin.cli._register_commands()
    with serving(witness) as server:
        result = CliRunner().invoke(
            toolpin.cli.cli,
            ["log", "crawl", "--log", str(tmp_path / "log"), "--key", str(key), "--servers",
             str(servers), "--json", "--witness", w1.key.text, server.url],
            standalone_mode=False,
        )  # fmt: skip
    assert result.exception is None and result.return_value == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["new"] == 1 and doc["witnesses"]["published"] is True
    assert doc["witnesses"]["witnesses"][0]["cosigned"] is True
    cosigned = (tmp_path / "log" / "checkpoint").read_bytes()
    assert set(verify_cosignatures(cosigned, [w1.key])) == {w1.name}
