"""cosignature/v1 lines (C2SP tlog-cosignature): key texts, the signed message byte for
byte, and verification that ignores unknown keys but refuses a bad line of a known one."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from toolpin.publog.checkpoint import Checkpoint, sign_checkpoint
from toolpin.publog.cosignature import (
    CosignatureError,
    WitnessKey,
    WitnessSigner,
    cosign,
    cosignature_message,
    parse_cosignature_lines,
    parse_witness_vkey,
    verify_cosignatures,
)
from toolpin.publog.note import Signer, open_note

ORIGIN = "log.example/cosig-test"
BODY = Checkpoint(ORIGIN, 20852163, hashlib.sha256(b"root").digest()).body().encode()


def _signer(label: str, name: str = "witness.example/w1") -> WitnessSigner:
    return WitnessSigner(name=name, seed=hashlib.sha256(label.encode()).digest())


def _log_note() -> str:
    log = Signer.from_seed(ORIGIN, hashlib.sha256(b"log").digest())
    return sign_checkpoint(Checkpoint(ORIGIN, 20852163, hashlib.sha256(b"root").digest()), log)


def test_the_signed_message_is_header_time_line_and_whole_body() -> None:
    body = b"example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
    assert cosignature_message(body, 1679315147) == (b"cosignature/v1\ntime 1679315147\n" + body)
    with_ext = body + b"extension line\n"
    assert cosignature_message(with_ext, 0).endswith(b"\nextension line\n")


def test_a_line_is_key_id_timestamp_and_signature_checked_independently() -> None:
    w = _signer("one")
    line = cosign(BODY, w.name, w.seed, 1700000000)
    assert line.startswith("\u2014 witness.example/w1 ") and line.endswith("\n")
    blob = base64.b64decode(line.split(" ")[2])
    assert len(blob) == 4 + 8 + 64
    public = w.key.public
    # The key ID uses type byte 0x04, not the log keys' 0x01.
    expected_id = hashlib.sha256(b"witness.example/w1\n\x04" + public).digest()[:4]
    assert blob[:4] == expected_id == w.key.key_id
    assert int.from_bytes(blob[4:12], "big") == 1700000000
    message = b"cosignature/v1\ntime 1700000000\n" + BODY
    Ed25519PublicKey.from_public_bytes(public).verify(blob[12:], message)  # raises if not


def test_vkey_text_round_trips_and_is_checked() -> None:
    w = _signer("one")
    text = w.key.text
    name, hex_id, key64 = text.split("+", 2)
    assert name == w.name and hex_id == w.key.key_id.hex()
    assert base64.b64decode(key64)[0] == 0x04
    assert parse_witness_vkey(text + "\n") == w.key
    assert WitnessSigner.from_text(w.text) == w
    assert w.seed.hex() not in repr(w) and str(list(w.seed)) not in repr(w)
    log_vkey = Signer.from_seed("witness.example/w1", w.seed).verifier.text  # type 0x01
    bad = [
        log_vkey,  # a log (note) key is not a cosignature key
        f"{name}+00000000+{key64}",  # wrong id
        f"{name}+{hex_id}",
        f"a b+{hex_id}+{key64}",
        f"{name}+{hex_id}+{key64[:-2]}",
    ]
    for item in bad:
        with pytest.raises(CosignatureError):
            parse_witness_vkey(item)
    with pytest.raises(CosignatureError):
        WitnessSigner.from_text(Signer.from_seed("w", w.seed).text)


def test_verify_returns_each_known_witness_time_and_ignores_unknown_lines() -> None:
    w1, w2, w3 = _signer("one"), _signer("two", "witness.example/w2"), _signer("three", "w3")
    note = _log_note()
    cosigned = note + w1.cosign(BODY, 11) + w2.cosign(BODY, 22) + w3.cosign(BODY, 33)
    found = verify_cosignatures(cosigned.encode(), [w1.key, w2.key])
    assert found == {"witness.example/w1": 11, "witness.example/w2": 22}
    assert verify_cosignatures(note.encode(), [w1.key]) == {}
    # the log's note verification still accepts it: cosignatures are lines of unknown keys
    log = Signer.from_seed(ORIGIN, hashlib.sha256(b"log").digest())
    assert open_note(cosigned, [log.verifier]).text == BODY.decode()


def test_a_bad_line_of_a_known_witness_refuses_the_note() -> None:
    w = _signer("one")
    note = _log_note()
    other_body = BODY.replace(b"20852163", b"20852164")
    forged = note + w.cosign(other_body, 5)  # signed over another tree head
    with pytest.raises(CosignatureError, match="invalid cosignature from witness"):
        verify_cosignatures(forged.encode(), [w.key])
    short = base64.b64encode(w.key.key_id + b"\0" * 40).decode()
    with pytest.raises(CosignatureError, match="malformed cosignature"):
        verify_cosignatures((note + f"\u2014 {w.name} {short}\n").encode(), [w.key])
    huge_time = w.key.key_id + (1 << 63).to_bytes(8, "big") + b"\0" * 64
    line = f"\u2014 {w.name} {base64.b64encode(huge_time).decode()}\n"
    with pytest.raises(CosignatureError, match="invalid time"):
        verify_cosignatures((note + line).encode(), [w.key])
    # the same name with a log-type key ID is another key: ignored
    log_like = Signer.from_seed(w.name, w.seed)
    assert (
        verify_cosignatures(
            (
                note
                + f"\u2014 {w.name} "
                + base64.b64encode(log_like.key_id.to_bytes(4, "big") + b"\0" * 64).decode()
                + "\n"
            ).encode(),
            [w.key],
        )
        == {}
    )


def test_keys_and_times_out_of_range_are_refused() -> None:
    with pytest.raises(CosignatureError):
        cosignature_message(BODY, -1)
    with pytest.raises(CosignatureError):
        cosignature_message(BODY, 1 << 63)
    with pytest.raises(CosignatureError):
        cosignature_message(BODY.rstrip(b"\n"), 1)
    with pytest.raises(CosignatureError):
        WitnessSigner(name="bad name", seed=b"\0" * 32)
    with pytest.raises(CosignatureError):
        WitnessKey.from_public_key("w", b"\0" * 31)
    w = _signer("one")
    with pytest.raises(CosignatureError, match="ambiguous"):
        verify_cosignatures(
            (_log_note() + w.cosign(BODY, 1)).encode(),
            [w.key, WitnessKey(name=w.name, key_id=w.key.key_id, public=b"\1" * 32)],
        )


def test_witness_answers_are_parsed_for_shape() -> None:
    w = _signer("one")
    lines = w.cosign(BODY, 1) + _signer("two", "w2").cosign(BODY, 2)
    assert "".join(s.line for s in parse_cosignature_lines(lines.encode())) == lines
    for bad in [b"", b"no dash\n", lines.encode().rstrip(b"\n"), b"\xff\n"]:
        with pytest.raises(CosignatureError):
            parse_cosignature_lines(bad)
