"""tlog-checkpoint format and verification against a pinned key only."""

from __future__ import annotations

import base64

import pytest
from tlog_helpers import load_vectors, seeded_signer

from toolpin.publog.checkpoint import (
    Checkpoint,
    CheckpointError,
    open_checkpoint,
    parse_checkpoint_body,
    sign_checkpoint,
)
from toolpin.publog.merkle import EMPTY_ROOT, leaf_hash

ROOT = leaf_hash(b"hello world")


def test_go_sumdb_tree_text_parses() -> None:
    text = load_vectors("rfc6962_vectors.json")["gosumdb_record_hash"]["tree_text"]
    cp = parse_checkpoint_body(text)
    assert cp == Checkpoint("go.sum database tree", 123456789012, ROOT)
    assert cp.body() == text


def test_body_format_and_extensions() -> None:
    cp = Checkpoint("example.com/log", 7, ROOT, ("ext one",))
    assert cp.body() == f"example.com/log\n7\n{base64.b64encode(ROOT).decode()}\next one\n"
    assert parse_checkpoint_body(cp.body()) == cp


@pytest.mark.parametrize(
    "text",
    [
        "example.com/log\n7\n",
        "example.com/log\n07\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n",
        "example.com/log\n-7\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n",
        "example.com/log\n0x7\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n",
        "example.com/log\n7\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBTOOBIG=\n",
        "example.com/log\n7\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40Hmuw\n",
        "example.com/log\n7\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=",
        "example.com/log\n7\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n\n",
        "\n7\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n",
        "example.com/log\n99999999999999999999\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n",
        "example.com/log\n0\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n",
    ],
)
def test_malformed_bodies_are_rejected(text: str) -> None:
    with pytest.raises(CheckpointError):
        parse_checkpoint_body(text)


def test_empty_tree_checkpoint() -> None:
    cp = Checkpoint("example.com/log", 0, EMPTY_ROOT)
    assert parse_checkpoint_body(cp.body()) == cp


def test_signed_checkpoint_opens_with_its_pinned_key_only() -> None:
    signer = seeded_signer("example.com/log")
    other = seeded_signer("example.com/log", label="other")
    cp = Checkpoint("example.com/log", 3, ROOT)
    note = sign_checkpoint(cp, signer)
    assert note.startswith(cp.body() + "\n— example.com/log ")
    assert open_checkpoint(note, signer.verifier) == cp
    with pytest.raises(CheckpointError, match="no verifiable signatures"):
        open_checkpoint(note, other.verifier)
    # a note cosigned by another key still opens with the pinned key
    cosigned = note + sign_checkpoint(cp, other).split("\n\n", 1)[1]
    assert open_checkpoint(cosigned, signer.verifier) == cp


def test_origin_must_be_the_keys_log() -> None:
    signer = seeded_signer("example.com/log")
    note = sign_checkpoint(Checkpoint("example.com/log", 3, ROOT), signer)
    with pytest.raises(CheckpointError, match="origin"):
        open_checkpoint(note, signer.verifier, origin="example.com/other")
    with pytest.raises(CheckpointError, match="origin"):
        sign_checkpoint(Checkpoint("example.com/other", 3, ROOT), signer)
