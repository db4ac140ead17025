"""The log's side: ``toolpin log witness push`` against real witnesses on loopback (and
hostile ones), and the cosigned checkpoint it publishes, which every log verifier still
accepts."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from witness_helpers import Fork, entries, log_signer, make_witness, serving, witness_signer

import toolpin.cli
from toolpin.publog.checkpoint import open_checkpoint
from toolpin.publog.cosignature import WitnessSigner, verify_cosignatures
from toolpin.publog.note import split_note
from toolpin.publog.tiles import TileLog
from toolpin.publog.verify import verify_log
from toolpin.witness.cosigner import Witness
from toolpin.witness.push import WitnessTarget, push_checkpoint

W2 = witness_signer("w2", "witness.example/w2")


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    path = tmp_path / "log"
    TileLog.open(path).append(entries(20), log_signer())
    return path


def _grow(log_dir: Path, count: int) -> None:
    log = TileLog.open(log_dir)
    log.append(entries(count, start=log.size), log_signer())


def _cli(*args: str) -> tuple[int, str]:
    toolpin.cli._register_commands()
    result = CliRunner().invoke(toolpin.cli.cli, list(args), standalone_mode=False)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        from toolpin.errors import ToolpinError

        assert isinstance(result.exception, ToolpinError), result.exception
        return result.exception.exit_code, result.exception.message
    return int(result.return_value or 0), result.output


def _push(log_dir: Path, state: Path, *witnesses: tuple[WitnessSigner, str]) -> tuple[int, str]:
    args = ["log", "witness", "push", "--log", str(log_dir), "--vkey", log_signer().verifier.text]
    for signer, url in witnesses:
        args += ["--witness", signer.key.text, url]
    return _cli(*args, "--state", str(state))


def _cosigners(log_dir: Path, *signers: WitnessSigner) -> dict[str, int]:
    return verify_cosignatures((log_dir / "checkpoint").read_bytes(), [s.key for s in signers])


def test_push_publishes_each_witness_cosignature_and_verifiers_still_accept(
    tmp_path: Path, log_dir: Path
) -> None:
    w1 = witness_signer()
    with (
        serving(make_witness(tmp_path / "s1")) as one,
        serving(make_witness(tmp_path / "s2", signer=W2)) as two,
    ):
        code, out = _push(log_dir, tmp_path / "push.json", (w1, one.url), (W2, two.url))
        assert code == 0, out
        assert "cosigned  witness.example/w1 (proof from size 0)" in out
        assert "published log.example/witnessed at size 20 with 2 of 2 cosignatures" in out
        assert set(_cosigners(log_dir, w1, W2)) == {w1.name, W2.name}
        # every existing verifier: the engine, the CLI audit, proofs
        verifier = log_signer().verifier
        assert verify_log(log_dir, verifier).ok
        assert open_checkpoint((log_dir / "checkpoint").read_bytes(), verifier).size == 20
        code, out = _cli("log", "verify", "--log", str(log_dir), "--vkey", verifier.text)
        assert code == 0 and out.startswith("ok: verified 20 entries"), out
        code, proof = _cli("log", "prove", "--log", str(log_dir), "--entry", "3")
        assert code == 0 and proof.count("\u2014 witness.example/") == 2  # carried verbatim
        (tmp_path / "e3.proof").write_text(proof)
        code, out = _cli(
            "log", "verify-proof", "--vkey", verifier.text, "--proof", str(tmp_path / "e3.proof"),
            "--log", str(log_dir),
        )  # fmt: skip
        assert code == 0 and out.startswith("ok: entry 3 is in log.example/witnessed"), out

        # the log grows: the proof starts at the size each witness cosigned last
        _grow(log_dir, 45)
        code, out = _push(log_dir, tmp_path / "push.json", (w1, one.url), (W2, two.url))
        assert code == 0 and out.count("(proof from size 20)") == 2, out
        _, sigs = split_note((log_dir / "checkpoint").read_text())
        assert len(sigs) == 3  # the log's signature and one line per witness
        # pushing the same checkpoint again replaces, never piles up, the lines
        code, out = _push(log_dir, tmp_path / "push.json", (w1, one.url))
        assert code == 0 and "(proof from size 65)" in out
        assert len(split_note((log_dir / "checkpoint").read_text())[1]) == 3
        assert set(_cosigners(log_dir, w1, W2)) == {w1.name, W2.name}


def test_a_forgotten_size_is_learnt_from_the_409(tmp_path: Path, log_dir: Path) -> None:
    w1 = witness_signer()
    with serving(make_witness(tmp_path / "s1")) as one:
        assert _push(log_dir, tmp_path / "a.json", (w1, one.url))[0] == 0
        _grow(log_dir, 7)
        code, out = _push(log_dir, tmp_path / "fresh.json", (w1, one.url))  # no memory: old 0
        assert code == 0 and "(proof from size 20)" in out, out
        memory = json.loads((tmp_path / "fresh.json").read_text())
        assert list(memory["sizes"].values()) == [27]


def test_a_witness_that_refuses_fails_alone(tmp_path: Path, log_dir: Path) -> None:
    w1 = witness_signer()
    stranger = make_witness(tmp_path / "s2", log_signer("x", "log.example/other"), signer=W2)
    with serving(make_witness(tmp_path / "s1")) as one, serving(stranger) as two:
        code, out = _push(log_dir, tmp_path / "p.json", (w1, one.url), (W2, two.url))
    assert code == 1
    assert "FAILED    witness.example/w2: the witness does not know this log (404)" in out
    assert "with 1 of 2 cosignatures" in out
    assert set(_cosigners(log_dir, w1, W2)) == {w1.name}
    # a witness nobody listens at
    code, out = _push(log_dir, tmp_path / "p.json", (W2, "http://127.0.0.1:9"))
    assert code == 1 and "the witness cannot be reached" in out


def test_a_witness_holding_another_history_is_a_conflict(tmp_path: Path, log_dir: Path) -> None:
    w1 = witness_signer()
    witness = make_witness(tmp_path / "s1")
    other = Fork(entries(30, tag="other"), log_signer())  # same key, another history
    assert witness.add_checkpoint(other.body(0, 30)).status == 200  # beyond our 20
    with serving(witness) as one:
        code, out = _push(log_dir, tmp_path / "p.json", (w1, one.url))
        assert code == 3, out
        assert "CONFLICT  witness.example/w1: the witness cosigned size 30, beyond" in out
    witness = make_witness(tmp_path / "s3")
    assert witness.add_checkpoint(other.body(0, 20)).status == 200  # same size, other root
    with serving(witness) as one:
        code, out = _push(log_dir, tmp_path / "p3.json", (w1, one.url))
        assert code == 3 and "another root at size 20" in out, out
        # when the log grows, the proof from 20 fails at the witness: refused, not a pass
        _grow(log_dir, 3)
        code, out = _push(log_dir, tmp_path / "p3.json", (w1, one.url))
        assert code == 1 and "refused the consistency proof (422)" in out, out
    assert _cosigners(log_dir, w1) == {}


Reply = Callable[[bytes], tuple[int, str, bytes]]


@contextmanager
def hostile(reply: Reply) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            data = self.rfile.read(int(self.headers["Content-Length"]))
            status, kind, body = reply(data)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_hostile_witness_answers_are_verified_and_never_printed(
    tmp_path: Path, log_dir: Path
) -> None:
    w1 = witness_signer()
    real = make_witness(tmp_path / "real", signer=witness_signer("evil-twin", w1.name))
    evil = "\u202e\x1b[31mEVIL"
    answers: list[tuple[int, str, bytes]] = [
        (200, "text/plain", f"\u2014 {w1.name} AAAA\n".encode()),  # malformed line
        (200, "text/plain", evil.encode() + b"\n"),
        (200, "text/plain", b"x" * (70 * 1024)),  # too large
        (409, "text/plain", b"5\n"),  # not text/x.tlog.size
        (409, "text/x.tlog.size", b"+5\n"),
        (302, "text/plain", b""),
        (500, "text/plain", evil.encode()),
    ]
    before = (log_dir / "checkpoint").read_bytes()
    for status, kind, body in answers:
        with hostile(lambda _d, a=(status, kind, body): a) as url:
            code, out = _push(log_dir, tmp_path / "h.json", (w1, url))
        assert code == 1, (status, body[:20], out)
        assert "EVIL" not in out and "\x1b" not in out and "\u202e" not in out
        assert (log_dir / "checkpoint").read_bytes() == before

    # a valid cosignature, but by another key under the witness's name: not accepted
    def twin(data: bytes) -> tuple[int, str, bytes]:
        answer = real.add_checkpoint(data)
        return answer.status, answer.content_type, answer.body

    with hostile(twin) as url:
        code, out = _push(log_dir, tmp_path / "h2.json", (w1, url))
    assert code == 1 and "the witness sent no cosignature of its key" in out, out
    assert (log_dir / "checkpoint").read_bytes() == before


def test_a_checkpoint_that_changed_meanwhile_is_not_rewritten(
    tmp_path: Path, log_dir: Path
) -> None:
    w1 = witness_signer()
    witness: Witness = make_witness(tmp_path / "s1")

    def grow_then_cosign(data: bytes) -> tuple[int, str, bytes]:
        answer = witness.add_checkpoint(data)
        _grow(log_dir, 1)  # the log appends while the witness answers
        return answer.status, answer.content_type, answer.body

    with hostile(grow_then_cosign) as url:
        outcome = push_checkpoint(
            log_dir, log_signer().verifier, [WitnessTarget(w1.key, url)], state=None
        )
    assert outcome.cosigned == 1 and not outcome.published
    assert open_checkpoint((log_dir / "checkpoint").read_bytes(), log_signer().verifier).size == 21
    assert _cosigners(log_dir, w1) == {}


def test_unusable_inputs_exit_2(tmp_path: Path, log_dir: Path) -> None:
    w1 = witness_signer()
    damaged = tmp_path / "damaged.json"
    damaged.write_text('{"version": 1, "sizes": {"a": -1}}')
    assert _push(log_dir, damaged, (w1, "http://127.0.0.1:9"))[0] == 2
    assert _push(log_dir, tmp_path / "p.json", (w1, "ftp://127.0.0.1:9"))[0] == 2
    code, message = _cli(
        "log", "witness", "push", "--log", str(log_dir), "--vkey", log_signer().verifier.text,
        "--witness", log_signer().verifier.text, "http://127.0.0.1:9",
    )  # fmt: skip
    assert code == 2 and "type 0x04" in message
    assert _push(tmp_path / "nolog", tmp_path / "p.json", (w1, "http://127.0.0.1:9"))[0] == 2
