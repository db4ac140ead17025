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

Consistency proofs (``toolpin log prove --since OLD``) have no C2SP text format, so toolpin
uses one of the same shape, self-contained (both signed checkpoints travel with it)::

    toolpin/tlog-consistency-proof@v1
    old <base64 of the older signed checkpoint, verbatim>
    <base64 consistency-proof hash, RFC 9162 order>
    ...
    <empty line>
    <the newer signed checkpoint, verbatim>

Verification opens both checkpoints with the pinned key (same origin), requires the old
size not to exceed the new one, and checks the RFC 9162 consistency proof between the
two roots. A verifier that kept its own copy of the older checkpoint should also check
that it is the one in the proof (``verify-proof --since``).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from toolpin.core.render import counted
from toolpin.errors import LogError
from toolpin.publog.checkpoint import Checkpoint, open_checkpoint, read_unverified
from toolpin.publog.merkle import HASH_SIZE, leaf_hash, verify_consistency, verify_inclusion
from toolpin.publog.note import Verifier
from toolpin.publog.tiles import TileLog

if TYPE_CHECKING:
    from toolpin.publog.policy import Policy

PROOF_HEADER = "c2sp.org/tlog-proof@v1"
CONSISTENCY_HEADER = "toolpin/tlog-consistency-proof@v1"
MAX_PROOF_HASHES = 63
MAX_CONSISTENCY_HASHES = 2 * 64
MAX_NOTE_BYTES = 16 << 10

__all__ = [
    "CONSISTENCY_HEADER",
    "PROOF_HEADER",
    "ConsistencyProof",
    "ProofError",
    "TlogProof",
    "is_consistency_proof",
    "make_consistency_proof",
    "make_proof",
    "parse_consistency_proof",
    "parse_proof",
    "proof_text",
    "verify_consistency_proof",
    "verify_proof",
    "verify_proof_in_log",
]


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
        path = [_b64(h) for h in self.path]
        return proof_text(self.index, path, self.checkpoint_note, self.extra)


def proof_text(
    index: int, path: Sequence[str], checkpoint_note: str, extra: bytes | None = None
) -> str:
    """The text of a :class:`TlogProof` whose ``path`` is already in base64 (a site's
    proofs share most of their hashes, each encoded once)."""
    lines = [PROOF_HEADER]
    if extra is not None:
        lines.append(f"extra {_b64(extra)}")
    lines.append(f"index {index}")
    lines.extend(path)
    return "\n".join(lines) + "\n\n" + checkpoint_note


def _split_proof(text: str, header: str) -> tuple[list[str], str]:
    """A proof text's lines above the empty line (the first is ``header``), and the
    checkpoint note below it."""
    head, sep, note = text.partition("\n\n")
    if not sep:
        raise ProofError("malformed proof: no empty line before the checkpoint")
    lines = head.split("\n")
    if lines[0] != header:
        raise ProofError(f"malformed proof: the first line is not {header}")
    return lines, note


def _proof_hashes(hashes: list[str], most: int) -> tuple[bytes, ...]:
    """A proof's hash lines, decoded: at most ``most``, each 32 bytes."""
    if len(hashes) > most:
        raise ProofError("malformed proof: too many hashes")
    path = tuple(_unb64(h, "a proof hash") for h in hashes)
    if any(len(h) != HASH_SIZE for h in path):
        raise ProofError("malformed proof: a proof hash is not 32 bytes")
    return path


def parse_proof(text: str) -> TlogProof:
    """Parse a tlog-proof text (no verification)."""
    lines, note = _split_proof(text, PROOF_HEADER)
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
    path = _proof_hashes(lines[position + 1 :], MAX_PROOF_HASHES)
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
    text: str,
    entry: bytes,
    verifier: Verifier,
    *,
    origin: str | None = None,
    policy: Policy | None = None,
) -> Checkpoint:
    """Check a tlog-proof for ``entry`` offline; returns the checkpoint it was proven in.
    With a witness ``policy``, the checkpoint must carry its quorum's cosignatures."""
    proof = parse_proof(text)
    checkpoint = open_checkpoint(proof.checkpoint_note, verifier, origin=origin)
    if policy is not None:
        policy.check(proof.checkpoint_note, verifier)
    if proof.index >= checkpoint.size:
        raise ProofError("the proof's index is beyond its checkpoint's tree size")
    if not verify_inclusion(
        leaf_hash(entry), proof.index, checkpoint.size, list(proof.path), checkpoint.root
    ):
        raise ProofError("the inclusion proof does not lead to the checkpoint's root")
    return checkpoint


def verify_proof_in_log(
    text: str, log_dir: str | Path, verifier: Verifier, *, policy: Policy | None = None
) -> tuple[Checkpoint, Checkpoint]:
    """Check a tlog-proof for its entry as read from the log in ``log_dir`` (or a site's
    copy of it), and that the log's current checkpoint, signed by ``verifier``, is
    consistent with the proof's (RFC 9162, from the log's tiles: a proof issued against an
    older checkpoint proves the entry in the current tree too). Returns the proof's
    checkpoint and the current one. With a witness ``policy``, the current checkpoint (the
    one the answer rests on) must carry its quorum's cosignatures."""
    proof = parse_proof(text)
    log = TileLog.open(log_dir, verifier)
    current = log.checkpoint
    if current is None or log.checkpoint_note is None:
        raise ProofError("the log has no checkpoint")
    if policy is not None:
        policy.check(log.checkpoint_note, verifier)
    if proof.index >= current.size:
        raise ProofError("the proof's index is beyond the log's checkpoint")
    entry = log.read_entry(proof.index)
    checkpoint = verify_proof(text, entry, verifier, origin=current.origin)
    if checkpoint.size > current.size:
        raise ProofError("the proof's checkpoint is newer than the log's")
    path = log.consistency_proof(checkpoint.size)
    if not verify_consistency(checkpoint.size, current.size, checkpoint.root, current.root, path):
        raise ProofError(
            f"the log's checkpoint {current.size} is not consistent with the proof's "
            f"checkpoint {checkpoint.size}"
        )
    return checkpoint, current


@dataclass(frozen=True)
class ConsistencyProof:
    old_note: str
    path: tuple[bytes, ...]
    new_note: str

    def to_text(self) -> str:
        lines = [CONSISTENCY_HEADER, f"old {_b64(self.old_note.encode('utf-8'))}"]
        lines.extend(_b64(h) for h in self.path)
        return "\n".join(lines) + "\n\n" + self.new_note


def is_consistency_proof(text: str) -> bool:
    """Whether ``text`` starts like a consistency proof (else: an inclusion proof)."""
    return text.split("\n", 1)[0] == CONSISTENCY_HEADER


def parse_consistency_proof(text: str) -> ConsistencyProof:
    """Parse a consistency-proof text (no verification)."""
    lines, note = _split_proof(text, CONSISTENCY_HEADER)
    if len(lines) < 2 or not lines[1].startswith("old "):
        raise ProofError("malformed proof: no old checkpoint line")
    encoded = lines[1][len("old ") :]
    if len(encoded) > MAX_NOTE_BYTES * 2:
        raise ProofError("malformed proof: the old checkpoint is too large")
    try:
        old_note = _unb64(encoded, "the old checkpoint").decode("utf-8")
    except UnicodeDecodeError:
        raise ProofError("malformed proof: the old checkpoint is not UTF-8") from None
    path = _proof_hashes(lines[2:], MAX_CONSISTENCY_HASHES)
    return ConsistencyProof(old_note, path, note)


def make_consistency_proof(log: TileLog, old_note: str, *, verifier: Verifier | None) -> str:
    """The proof that ``log``'s current checkpoint extends the older checkpoint ``old_note``.

    With ``verifier`` both checkpoints are checked first; without, the old checkpoint must
    at least name the same origin. The proof is checked before it is returned, so a log
    rolled back behind or forked from ``old_note`` gets an error, never a proof.
    """
    note = log.checkpoint_note
    if note is None:
        raise ProofError(f"{log.path} has no checkpoint")
    if verifier is not None:
        new = open_checkpoint(note, verifier)
        old = open_checkpoint(old_note, verifier, origin=new.origin)
    else:
        new = read_unverified(note)
        old = read_unverified(old_note)
        if old.origin != new.origin:
            raise ProofError("the old checkpoint belongs to another log (origin differs)")
    if old.size > new.size:
        raise ProofError(
            f"the old checkpoint has {counted(old.size, 'entry')} but the log only {new.size}; "
            "the log was rolled back",
        )
    path = log.consistency_proof(old.size, new.size)
    if not verify_consistency(old.size, new.size, old.root, new.root, path):
        raise ProofError(
            f"the log is not consistent with the old checkpoint (size {old.size}): "
            "it was forked or rewritten",
        )
    return ConsistencyProof(old_note, tuple(path), note).to_text()


def verify_consistency_proof(
    text: str, verifier: Verifier, *, kept: str | None = None, policy: Policy | None = None
) -> tuple[Checkpoint, Checkpoint]:
    """Check a consistency proof offline; returns ``(old, new)`` checkpoints.

    ``kept``: the older checkpoint the caller kept; it must be the one in the proof.
    ``policy``: the new checkpoint must carry the witness policy's quorum.
    """
    proof = parse_consistency_proof(text)
    new = open_checkpoint(proof.new_note, verifier)
    if policy is not None:
        policy.check(proof.new_note, verifier)
    old = open_checkpoint(proof.old_note, verifier, origin=new.origin)
    if kept is not None:
        mine = open_checkpoint(kept, verifier, origin=new.origin)
        if (mine.size, mine.root) != (old.size, old.root):
            raise ProofError("the proof starts from another checkpoint than the one you kept")
    if old.size > new.size:
        raise ProofError("the proof's old checkpoint is larger than its new one")
    if not verify_consistency(old.size, new.size, old.root, new.root, list(proof.path)):
        raise ProofError("the consistency proof does not lead from the old root to the new one")
    return old, new


def proof_hashes(proof: Sequence[bytes]) -> list[str]:
    return [_b64(h) for h in proof]
