"""The witness's signing key: ``PRIVATE+KEY+<name>+<id>+base64(0x04 || seed)``.

Written like the log's key (:func:`toolpin.publog.keys.write_private_key`: mode 0600,
never overwritten, never inside a log directory) and read only from a file.
"""

from __future__ import annotations

from pathlib import Path

from toolpin.errors import LogError
from toolpin.publog.cosignature import WitnessSigner
from toolpin.publog.keys import read_key_text, require_key_name, write_private_key
from toolpin.publog.note import NoteError

__all__ = ["generate_witness_key", "load_witness_signer"]


def generate_witness_key(name: str, path: str | Path) -> str:
    """Write a new witness key named ``name`` to ``path``; return its verifier key text."""
    require_key_name(name, "the witness name", "witness.example.com/w1")
    signer = WitnessSigner.generate(name)
    write_private_key(path, signer.text)
    return signer.key.text


def load_witness_signer(path: str | Path) -> WitnessSigner:
    text = read_key_text(path)
    try:
        return WitnessSigner.from_text(text)
    except NoteError as exc:
        raise LogError(f"the key file {path} is not a usable witness key: {exc.message}") from None
