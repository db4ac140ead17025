"""C2SP ``tlog-proof`` bundles: an offline-verifiable proof that an entry is in the log.

Text format (``c2sp.org/tlog-proof@v1``)::

    c2sp.org/tlog-proof@v1
    [extra <base64 opaque data>]
    index <zero-based decimal index>
    <base64 inclusion-proof hash, leaf's sibling first>
    ...
    <empty line>
    <the signed checkpoint, verbatim>

Verification checks the checkpoint with the pinned verifier key only, then the RFC 9162
inclusion proof of ``SHA-256(0x00 || entry)`` at ``index`` against the checkpoint's root.
The ``extra`` data is carried but never trusted.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass

from toolpin.errors import LogError
from toolpin.publog.checkpoint import Checkpoint, open_checkpoint, read_unverified
from toolpin.publog.merkle import HASH_SIZE, leaf_hash, verify_inclusion
from toolpin.publog.note import Verifier
from toolpin.publog.tiles import TileLog

PROOF_HEADER = "c2sp.org/tlog-proof@v1"
MAX_PROOF_HASHES = 63

__all__ = ["PROOF_HEADER", "ProofError", "TlogProof", "make_proof", "parse_proof", "verify_proof"]


class ProofError(LogError):
    """A tlog-proof that is malformed or does not prove what it claims."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str, what: str) -> bytes:
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise ProofError(f"malformed proof: {what} is not base64") from None
    if _b64(raw) != text:
        raise ProofError(f"malformed proof: {what} is not canonical base64")
    return raw


@dataclass(frozen=True)
class TlogProof:
    index: int
    path: tuple[bytes, ...]
    checkpoint_note: str
    extra: bytes | None = None

    def to_text(self) -> str:
        lines = [PROOF_HEADER]
        if self.extra is not None:
            lines.append(f"extra {_b64(self.extra)}")
        lines.append(f"index {self.index}")
        lines.extend(_b64(h) for h in self.path)
        return "\n".join(lines) + "\n\n" + self.checkpoint_note


def parse_proof(text: str) -> TlogProof:
    """Parse a tlog-proof text (no verification)."""
    head, sep, note = text.partition("\n\n")
    if not sep:
        raise ProofError("malformed proof: no empty line before the checkpoint")
    lines = head.split("\n")
    if lines[0] != PROOF_HEADER:
        raise ProofError(f"malformed proof: the first line is not {PROOF_HEADER}")
    position = 1
    extra = None
    if position < len(lines) and lines[position].startswith("extra "):
        extra = _unb64(lines[position][len("extra ") :], "extra")
        position += 1
    if position >= len(lines) or not lines[position].startswith("index "):
        raise ProofError("malformed proof: no index line")
    index_text = lines[position][len("index ") :]
    if (
        not index_text.isascii()
        or not index_text.isdigit()
        or (index_text != "0" and index_text.startswith("0"))
        or len(index_text) > 19
    ):
        raise ProofError("malformed proof: the index is not a decimal without leading zeroes")
    hashes = lines[position + 1 :]
    if len(hashes) > MAX_PROOF_HASHES:
        raise ProofError("malformed proof: too many hashes")
    path = tuple(_unb64(h, "a proof hash") for h in hashes)
    if any(len(h) != HASH_SIZE for h in path):
        raise ProofError("malformed proof: a proof hash is not 32 bytes")
    return TlogProof(index=int(index_text), path=path, checkpoint_note=note, extra=extra)


def make_proof(
    log: TileLog, index: int, *, verifier: Verifier | None = None, extra: bytes | None = None
) -> str:
    """The tlog-proof of entry ``index`` against the log's current checkpoint.

    With ``verifier``, the checkpoint is checked first; the proof is always checked against
    the checkpoint's root before it is returned.
    """
    note = log.checkpoint_note
    if note is None:
        raise ProofError(f"{log.path} has no checkpoint")
    checkpoint = open_checkpoint(note, verifier) if verifier else read_unverified(note)
    if not 0 <= index < checkpoint.size:
        raise ProofError(f"entry {index} is not in the log (size {checkpoint.size})")
    path = log.inclusion_proof(index, checkpoint.size)
    entry = log.read_entry(index)
    if not verify_inclusion(leaf_hash(entry), index, checkpoint.size, path, checkpoint.root):
        raise ProofError(
            "the log's tiles do not prove its own entry against its checkpoint",
            advice="Run `toolpin log verify` on the log directory.",
        )
    return TlogProof(index, tuple(path), note, extra).to_text()


def verify_proof(
    text: str, entry: bytes, verifier: Verifier, *, origin: str | None = None
) -> Checkpoint:
    """Check a tlog-proof for ``entry`` offline; returns the checkpoint it was proven in."""
    proof = parse_proof(text)
    checkpoint = open_checkpoint(proof.checkpoint_note, verifier, origin=origin)
    if proof.index >= checkpoint.size:
        raise ProofError("the proof's index is beyond its checkpoint's tree size")
    if not verify_inclusion(
        leaf_hash(entry), proof.index, checkpoint.size, list(proof.path), checkpoint.root
    ):
        raise ProofError("the inclusion proof does not lead to the checkpoint's root")
    return checkpoint


def proof_hashes(proof: Sequence[bytes]) -> list[str]:
    return [_b64(h) for h in proof]
