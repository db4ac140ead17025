"""The add-checkpoint endpoint over real HTTP on loopback, status by status as C2SP
tlog-witness says, and the Host, Origin and body-size guards."""

from __future__ import annotations

import base64
import socket
from pathlib import Path

import pytest
from witness_helpers import (
    ORIGIN,
    Fork,
    entries,
    log_signer,
    make_witness,
    post,
    serving,
    witness_signer,
)

from toolpin.publog.cosignature import verify_cosignatures
from toolpin.publog.note import Signer, sign_note
from toolpin.witness.cosigner import MAX_REQUEST_BYTES


@pytest.fixture
def fork() -> Fork:
    return Fork(entries(40), log_signer())


def test_first_checkpoint_then_a_consistent_one_are_cosigned(tmp_path: Path, fork: Fork) -> None:
    w = witness_signer()
    with serving(make_witness(tmp_path / "state")) as server:
        status, kind, body = post(server.port, fork.body(0, 10))
        assert status == 200 and kind.startswith("text/plain")
        assert body.startswith("\u2014 witness.example/w1 ".encode()) and body.endswith(b"\n")
        found = verify_cosignatures(fork.note(10).encode() + body, [w.key])
        assert set(found) == {w.name}
        status, _, body = post(server.port, fork.body(10, 25))
        assert status == 200
        assert verify_cosignatures(fork.note(25).encode() + body, [w.key])
        # the same checkpoint again: cosigned again (same size, same root)
        status, _, body = post(server.port, fork.body(25, 25))
        assert status == 200


def test_a_stale_or_future_old_size_is_409_with_the_size_held(tmp_path: Path, fork: Fork) -> None:
    with serving(make_witness(tmp_path / "state")) as server:
        assert post(server.port, fork.body(0, 12))[0] == 200
        for old in (0, 5, 13):
            status, kind, body = post(server.port, fork.body(old, 30))
            assert (status, kind, body) == (409, "text/x.tlog.size", b"12\n")
        # a rollback is refused the same way
        assert post(server.port, fork.body(0, 8))[:2] == (409, "text/x.tlog.size")


def test_another_root_at_the_size_held_is_409_and_kept_as_evidence(
    tmp_path: Path, fork: Fork
) -> None:
    other = Fork(entries(40, tag="other"), log_signer())
    with serving(make_witness(tmp_path / "state")) as server:
        assert post(server.port, fork.body(0, 10))[0] == 200
        status, _, body = post(server.port, other.body(10, 10))
        assert status == 409 and b"different root" in body
        # and a consistency proof "from 10" within the other history fails
        assert post(server.port, other.body(10, 20))[0] == 422
    kept = sorted((tmp_path / "state" / "evidence").iterdir())
    assert len(kept) == 2 and {p.name.split("-")[1] for p in kept} == {"fork", "inconsistent"}


def test_a_bad_proof_is_422(tmp_path: Path, fork: Fork) -> None:
    with serving(make_witness(tmp_path / "state")) as server:
        assert post(server.port, fork.body(0, 10))[0] == 200
        good = fork.tree.consistency_proof(10, 20)
        for proof in ([], good[:-1], [*good, good[0]], [b"\0" * 32, *good[1:]]):
            assert post(server.port, fork.body(10, 20, proof=proof))[0] == 422
    with serving(make_witness(tmp_path / "fresh")) as server:
        # old size 0 takes an empty proof
        assert post(server.port, fork.body(0, 5, proof=[b"\1" * 32]))[0] == 422
        assert post(server.port, fork.body(0, 5))[0] == 200


def test_unknown_origin_is_404_and_an_untrusted_signature_403(tmp_path: Path, fork: Fork) -> None:
    stranger = Fork(entries(5), log_signer("x", "log.example/stranger"))
    impostor = Fork(entries(5), log_signer("impostor"))  # same origin, another key
    with serving(make_witness(tmp_path / "state")) as server:
        assert post(server.port, stranger.body(0, 5))[0] == 404
        assert post(server.port, impostor.body(0, 5))[0] == 403
        # a checkpoint with a broken signature of the trusted key is 403 too
        note = fork.note(5)
        text, sig = note.rsplit(" ", 1)
        raw = bytearray(base64.b64decode(sig))
        raw[-1] ^= 1
        broken = text + " " + base64.b64encode(bytes(raw)).decode() + "\n"
        assert post(server.port, b"old 0\n\n" + broken.encode())[0] == 403
        # extra signatures of unknown keys are ignored
        extra = Signer.from_seed("someone.example", b"\7" * 32)
        text = fork.note(5).split("\n\n")[0] + "\n"
        both = sign_note(text, [extra, fork.signer])
        assert post(server.port, b"old 0\n\n" + both.encode())[0] == 200


def test_malformed_bodies_are_400_without_echo(tmp_path: Path, fork: Fork) -> None:
    note = fork.note(10).encode()
    cases = [
        b"",
        b"old 00\n\n" + note,
        b"old -1\n\n" + note,
        b"old 1x\n\n" + note,
        b"new 0\n\n" + note,
        b"old 0\n" + note,  # no empty line before the checkpoint... the note's own is taken
        b"old 0\nnot base64!\n\n" + note,
        b"old 0\n" + base64.b64encode(b"\0" * 31) + b"\n\n" + note,
        b"old 0\n" + b"\n".join([base64.b64encode(b"\0" * 32)] * 64) + b"\n\n" + note,
        b"old 0\n\n" + note.replace(b"\n10\n", b"\n010\n"),
        b"old 0\n\n\xff\xfe\n",
        b"old 20\n\n" + note,  # old above the checkpoint's size
    ]
    with serving(make_witness(tmp_path / "state")) as server:
        for body in cases:
            status, kind, answer = post(server.port, body)
            assert status == 400, body[:40]
            assert kind.startswith("text/plain") and answer.count(b"\n") == 1
            assert b"\xff" not in answer and ORIGIN.encode() not in answer


def test_host_origin_path_method_and_size_guards(tmp_path: Path, fork: Fork) -> None:
    body = fork.body(0, 10)
    with serving(make_witness(tmp_path / "state")) as server:
        port = server.port
        assert post(port, body, headers={"Host": "evil.example"})[0] == 403
        assert post(port, body, headers={"Host": f"evil.example:{port}"})[0] == 403
        assert post(port, body, headers={"Origin": "https://evil.example"})[0] == 403
        assert post(port, body, headers={"Origin": f"http://localhost:{port}"})[0] == 200
        again = fork.body(10, 10)
        assert post(port, again, headers={"Host": f"localhost:{port}"})[0] == 200
        assert post(port, body, path="/")[0] == 404
        assert post(port, body, path="/add-checkpoint/")[0] == 404
        assert post(port, b"", method="GET")[0] == 405
        host = f"Host: 127.0.0.1:{port}\r\n".encode()
        head = b"POST /add-checkpoint HTTP/1.1\r\n" + host
        too_big = head + f"Content-Length: {MAX_REQUEST_BYTES + 1}\r\n\r\n".encode()
        assert _raw(port, too_big).startswith(b"HTTP/1.1 413 ")  # answered before the body
        chunked = head + b"Transfer-Encoding: chunked\r\n\r\n5\r\nold 0\r\n0\r\n\r\n"
        assert _raw(port, chunked).startswith(b"HTTP/1.1 411 ")
        assert _raw(port, head + b"\r\n").startswith(b"HTTP/1.1 411 ")


def _raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        return sock.recv(4096)


def test_a_witness_refuses_non_loopback_unless_public(tmp_path: Path) -> None:
    from toolpin.errors import InputError
    from toolpin.witness.server import WitnessServer

    with pytest.raises(InputError, match="not a loopback"):
        WitnessServer(make_witness(tmp_path / "s"), "0.0.0.0", 0)
