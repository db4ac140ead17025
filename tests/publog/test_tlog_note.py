"""C2SP signed notes against the Go `note` package's published example and the C2SP spec."""

from __future__ import annotations

import base64
import hashlib

import pytest
from tlog_helpers import load_vectors

from toolpin.publog.note import (
    MAX_SIGNATURES,
    NoteError,
    Signer,
    Verifier,
    key_id,
    open_note,
    sign_note,
    split_note,
)

V = load_vectors("signed_note_vectors.json")
GO = V["go_note"]
SPEC = V["c2sp_example"]
PETER = Verifier.from_text(GO["verifier_key"])
ENOCH = Verifier.from_text(GO["second_verifier_key"])
TEXT = GO["text"]
PETER_SIG = GO["signed_note"][len(TEXT) + 1 :]
ENOCH_SIG = GO["second_signature_line"]


def test_go_signer_key_signs_the_published_note_byte_for_byte() -> None:
    signer = Signer.from_text(GO["signer_key"])
    assert signer.name == "PeterNeumann"
    assert f"{signer.key_id:08x}" == "c74f20a3"
    assert signer.verifier.text == GO["verifier_key"]
    assert signer.text == GO["signer_key"]
    assert sign_note(TEXT, [signer]) == GO["signed_note"]


def test_go_verifier_opens_the_published_note() -> None:
    note = open_note(GO["signed_note"].encode(), [PETER])
    assert note.text == TEXT
    assert [(s.name, s.key_id) for s in note.verified] == [("PeterNeumann", 0xC74F20A3)]
    assert note.unverified == ()


def test_c2sp_spec_example_opens_and_key_id_is_recomputed() -> None:
    verifier = Verifier.from_text(SPEC["verifier_key"])
    assert verifier.text == SPEC["verifier_key"]
    assert open_note(SPEC["signed_note"], [verifier]).text == SPEC["text"]
    typed = b"\x01" + verifier.public_key
    digest = hashlib.sha256(b"example.com/foo\n" + typed).digest()
    assert key_id("example.com/foo", typed) == int.from_bytes(digest[:4], "big") == 0x530D903A


def test_unknown_signatures_are_ignored_and_known_ones_counted() -> None:
    message = TEXT + "\n" + PETER_SIG + ENOCH_SIG
    note = open_note(message, [PETER])
    assert [s.name for s in note.verified] == ["PeterNeumann"]
    assert [s.name for s in note.unverified] == ["EnochRoot"]
    both = open_note(message, [PETER, ENOCH])
    assert [s.name for s in both.verified] == ["PeterNeumann", "EnochRoot"]


def test_no_known_key_means_rejected() -> None:
    with pytest.raises(NoteError, match="no verifiable signatures"):
        open_note(TEXT + "\n" + PETER_SIG + ENOCH_SIG, [])
    with pytest.raises(NoteError, match="no verifiable signatures"):
        open_note(TEXT + "\n" + ENOCH_SIG, [PETER])


def test_same_name_other_id_is_unknown_not_failed() -> None:
    impostor = Signer.generate("PeterNeumann")
    message = sign_note(TEXT, [impostor])
    with pytest.raises(NoteError, match="no verifiable signatures"):
        open_note(message, [PETER])


def test_a_known_key_with_a_bad_signature_rejects_the_note() -> None:
    broken = PETER_SIG[:60] + "ABCD" + PETER_SIG[60:]
    with pytest.raises(NoteError, match="invalid signature"):
        open_note(TEXT + "\n" + broken, [PETER])
    altered = TEXT.replace("answer", "Answer") + "\n" + PETER_SIG
    with pytest.raises(NoteError, match="invalid signature"):
        open_note(altered, [PETER])


def test_duplicated_signatures_count_once() -> None:
    note = open_note(TEXT + "\n" + PETER_SIG + PETER_SIG + ENOCH_SIG + ENOCH_SIG, [PETER])
    assert len(note.verified) == 1
    assert len(note.unverified) == 1


@pytest.mark.parametrize(
    "message",
    [
        TEXT,
        TEXT + "\n",
        TEXT + "\n" + PETER_SIG[:-1],
        "\x01" + TEXT + "\n" + PETER_SIG,
        TEXT + "\n" + "— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXg"
        "KvqfqdngotpRZb6KE6RyyBwJnAM=",
        TEXT + "\n" + PETER_SIG + "Unexpected line.\n",
        TEXT + "\n" + PETER_SIG.replace("—", "-"),
        TEXT.replace("\n", "\r\n", 1) + "\n" + PETER_SIG,
        TEXT + "\n" + "— PeterNeumann AAAA\n",
        TEXT + "\n" + "— PeterNeumann not*base64\n",
    ],
)
def test_malformed_notes_are_rejected(message: str) -> None:
    with pytest.raises(NoteError, match="malformed"):
        open_note(message, [PETER])


def test_invalid_utf8_is_rejected() -> None:
    with pytest.raises(NoteError, match="UTF-8"):
        open_note(b"\xff" + (TEXT + "\n" + PETER_SIG).encode(), [PETER])


def test_signature_count_is_capped() -> None:
    assert MAX_SIGNATURES >= 16
    ok = open_note(TEXT + "\n" + PETER_SIG * 16, [PETER])
    assert len(ok.verified) == 1
    with pytest.raises(NoteError, match="more than"):
        open_note(TEXT + "\n" + PETER_SIG * (MAX_SIGNATURES + 1), [PETER])


def test_text_may_contain_blank_lines_split_at_the_last_one() -> None:
    signer = Signer.generate("example.com/log")
    text = "first\n\nsecond\n"
    note = open_note(sign_note(text, [signer]), [signer.verifier])
    assert note.text == text
    assert split_note(sign_note(text, [signer]))[0] == text


def test_every_mangled_verifier_key_is_rejected() -> None:
    key = GO["verifier_key"]
    for bad in GO["bad_verifier_keys"]:
        with pytest.raises(NoteError):
            Verifier.from_text(bad)
    for i in range(len(key)):
        mangled = key[:i] + chr(ord(key[i]) + 1) + key[i + 1 :]
        with pytest.raises(NoteError):
            Verifier.from_text(mangled)
    for i in range(len(key)):
        for j in range(i + 1, len(key) + 1):
            if (i, j) != (0, len(key)):
                with pytest.raises(NoteError):
                    Verifier.from_text(key[i:j])


def test_every_mangled_signer_key_is_rejected() -> None:
    key = GO["signer_key"]
    for i in range(len(key)):
        mangled = key[:i] + chr(ord(key[i]) + 1) + key[i + 1 :]
        with pytest.raises(NoteError):
            Signer.from_text(mangled)
    for cut in range(1, len(key)):
        with pytest.raises(NoteError):
            Signer.from_text(key[:cut])


def test_key_names_are_validated() -> None:
    for name in ["", "a b", "a+b", "tab\there", "nl\nx"]:
        with pytest.raises(NoteError):
            Signer.generate(name)


def test_sign_refuses_unterminated_text_and_control_characters() -> None:
    signer = Signer.generate("example.com/log")
    with pytest.raises(NoteError):
        sign_note("no newline", [signer])
    with pytest.raises(NoteError):
        sign_note("bell\x07\n", [signer])


def test_signer_repr_hides_the_seed() -> None:
    signer = Signer.from_text(GO["signer_key"])
    seed_b64 = base64.b64encode(signer.seed).decode()
    assert seed_b64 not in repr(signer)
    assert signer.seed.hex() not in repr(signer)
