"""C2SP tlog-proof: produce from tiles, verify offline, reject every alteration."""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest
from tlog_helpers import make_entries, seeded_signer

from toolpin.errors import LogError
from toolpin.publog.note import Signer
from toolpin.publog.proof import (
    CONSISTENCY_HEADER,
    PROOF_HEADER,
    TlogProof,
    make_proof,
    parse_consistency_proof,
    parse_proof,
    verify_proof,
)
from toolpin.publog.tiles import TileLog

BuildLog = Callable[..., TileLog]


def test_proof_text_has_the_c2sp_shape(build_log: BuildLog, signer: Signer) -> None:
    log = build_log(300)
    text = make_proof(log, 7, verifier=signer.verifier)
    lines = text.split("\n")
    assert lines[0] == PROOF_HEADER
    assert lines[1] == "index 7"
    hashes = lines[2 : lines.index("")]
    assert len(hashes) == 9  # ceil(log2(300))
    assert all(len(base64.b64decode(h)) == 32 for h in hashes)
    assert text.endswith(log.checkpoint_note or "")
    assert parse_proof(text).to_text() == text


def test_every_entry_proves_and_verifies_offline(build_log: BuildLog, signer: Signer) -> None:
    log = build_log(3, 260, 40)
    entries = make_entries(303)
    for index in range(0, 303, 7):
        checkpoint = verify_proof(make_proof(log, index), entries[index], signer.verifier)
        assert checkpoint.size == 303


def test_extra_data_round_trips_but_is_not_trusted(build_log: BuildLog, signer: Signer) -> None:
    log = build_log(5)
    text = make_proof(log, 2, extra=b"pkg@1.2.3")
    proof = parse_proof(text)
    assert proof.extra == b"pkg@1.2.3" and text.split("\n")[1] == "extra cGtnQDEuMi4z"
    altered = text.replace("extra cGtnQDEuMi4z", "extra b3RoZXI=")
    assert verify_proof(altered, make_entries(5)[2], signer.verifier).size == 5


def test_wrong_entry_index_key_or_hashes_fail(
    build_log: BuildLog, signer: Signer, other_signer: Signer
) -> None:
    log = build_log(100)
    entries = make_entries(100)
    text = make_proof(log, 42)
    with pytest.raises(LogError, match="root"):
        verify_proof(text, entries[41], signer.verifier)
    with pytest.raises(LogError, match="root"):
        verify_proof(text.replace("index 42", "index 43"), entries[42], signer.verifier)
    with pytest.raises(LogError):
        verify_proof(text, entries[42], other_signer.verifier)
    proof = parse_proof(text)
    for i in range(len(proof.path)):
        path = list(proof.path)
        path[i] = bytes([path[i][0] ^ 1]) + path[i][1:]
        altered = TlogProof(proof.index, tuple(path), proof.checkpoint_note).to_text()
        with pytest.raises(LogError, match="root"):
            verify_proof(altered, entries[42], signer.verifier)
    shorter = TlogProof(proof.index, proof.path[:-1], proof.checkpoint_note).to_text()
    with pytest.raises(LogError):
        verify_proof(shorter, entries[42], signer.verifier)
    longer = TlogProof(proof.index, (*proof.path, proof.path[0]), proof.checkpoint_note)
    with pytest.raises(LogError):
        verify_proof(longer.to_text(), entries[42], signer.verifier)
    beyond = TlogProof(100, proof.path, proof.checkpoint_note).to_text()
    with pytest.raises(LogError, match="beyond"):
        verify_proof(beyond, entries[42], signer.verifier)


def test_a_proof_against_a_forged_checkpoint_fails(build_log: BuildLog, signer: Signer) -> None:
    log = build_log(10)
    text = make_proof(log, 1)
    forged = text.replace("\n10\n", "\n11\n")
    with pytest.raises(LogError, match="invalid signature"):
        verify_proof(forged, make_entries(10)[1], signer.verifier)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "c2sp.org/tlog-proof@v2\nindex 0\n\nx\n",
        "c2sp.org/tlog-proof@v1\nindex 01\n\nx\n",
        "c2sp.org/tlog-proof@v1\nindex -1\n\nx\n",
        "c2sp.org/tlog-proof@v1\n\nx\n",
        "c2sp.org/tlog-proof@v1\nindex 0\nnot base64!\n\nx\n",
        "c2sp.org/tlog-proof@v1\nindex 0\nAAAA\n\nx\n",
        "c2sp.org/tlog-proof@v1\nindex 0",
    ],
)
def test_malformed_proofs_are_rejected(text: str) -> None:
    with pytest.raises(LogError, match="malformed"):
        parse_proof(text)


def test_make_proof_checks_the_checkpoint_key_and_index(
    build_log: BuildLog, other_signer: Signer, tmp_path: object
) -> None:
    log = build_log(4)
    with pytest.raises(LogError):
        make_proof(log, 1, verifier=other_signer.verifier)
    with pytest.raises(LogError, match="not in the log"):
        make_proof(log, 4)
    empty = TileLog.open(log.path.parent / "none")
    with pytest.raises(LogError, match="no checkpoint"):
        make_proof(empty, 0)
    # a log whose bundle was altered cannot produce a proof for the altered entry
    bundle = log.path / "tile/entries/000.p/4"
    data = bytearray(bundle.read_bytes())
    data[-2] ^= 1
    bundle.write_bytes(bytes(data))
    with pytest.raises(LogError, match="do not prove"):
        make_proof(log, 3)
    assert seeded_signer().verifier.text.startswith("log.example/toolpin-test+")


_HASH = base64.b64encode(bytes(32)).decode()
_OLD = base64.b64encode(b"log.example/x\n1\n" + _HASH.encode() + b"\n").decode()


@pytest.mark.parametrize(
    ("kind", "text", "reason"),
    [
        ("inclusion", f"{PROOF_HEADER}\nindex 0\n", "no empty line before the checkpoint"),
        ("consistency", f"{CONSISTENCY_HEADER}\nold {_OLD}\n", "no empty line before"),
        ("inclusion", f"{CONSISTENCY_HEADER}\nindex 0\n\nx\n", f"is not {PROOF_HEADER}"),
        ("consistency", f"{PROOF_HEADER}\nold {_OLD}\n\nx\n", f"is not {CONSISTENCY_HEADER}"),
        ("inclusion", f"{PROOF_HEADER}\nindex 0\n" + f"{_HASH}\n" * 64 + "\nx\n", "too many"),
        ("consistency", f"{CONSISTENCY_HEADER}\nold {_OLD}\n" + f"{_HASH}\n" * 129 + "\nx\n",
         "too many hashes"),
        ("inclusion", f"{PROOF_HEADER}\nindex 0\nAAAA\n\nx\n", "a proof hash is not 32 bytes"),
        ("consistency", f"{CONSISTENCY_HEADER}\nold {_OLD}\nAAAA\n\nx\n", "is not 32 bytes"),
    ],
)  # fmt: skip
def test_both_proof_kinds_refuse_a_bad_frame_or_hash_alike(
    kind: str, text: str, reason: str
) -> None:
    parse = parse_proof if kind == "inclusion" else parse_consistency_proof
    with pytest.raises(LogError) as refused:
        parse(text)
    assert refused.value.message.startswith("malformed proof: ")
    assert reason in refused.value.message


def test_both_proof_kinds_take_as_many_hashes_as_a_proof_can_have() -> None:
    inclusion = parse_proof(f"{PROOF_HEADER}\nindex 0\n" + f"{_HASH}\n" * 63 + "\nnote\n")
    assert len(inclusion.path) == 63 and inclusion.checkpoint_note == "note\n"
    text = f"{CONSISTENCY_HEADER}\nold {_OLD}\n" + f"{_HASH}\n" * 128 + "\nnote\n"
    consistency = parse_consistency_proof(text)
    assert len(consistency.path) == 128 and consistency.new_note == "note\n"
