"""Proofs a lock carries: that a log recorded an entry, checkable offline.

A :class:`LogProof` holds everything needed to show, with nothing but the log's verifier
key, that entry ``i`` of a log records a digest: the signed checkpoint note (verbatim),
the entry's bytes (an entry is about 1 KB and at most :data:`MAX_ENTRY_BYTES`; recording
it keeps the check offline), its RFC 9162 leaf hash, and the inclusion proof (hashes)
from that leaf to the checkpoint's root.

* :func:`prove`: for entries a lookup confirmed, fetch the log's current checkpoint
  (verified and checked against the kept one, as :func:`toolpin.evidence.look_up` does)
  and each entry with its inclusion proof from the tiles;
* :func:`verify_offline`: the checkpoint's signature with the pinned key (or, without a
  key, the checkpoint as written), the leaf hash of the entry bytes, the inclusion proof
  to the checkpoint's root, and the digest inside the entry;
* :func:`consistent_now`: with the log reachable, the log's current checkpoint (checked
  against the kept one) must extend every recorded checkpoint (RFC 9162 consistency
  proof from the tiles). A log whose signed checkpoints contradict a recorded one is
  forked or rolled back: it is marked distrusted, with the recorded checkpoint kept as
  the evidence.

Every failure is a :class:`~toolpin.evidence.errors.LogProblem` with fixed text.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from toolpin.errors import LogError
from toolpin.evidence import state
from toolpin.evidence.errors import LogProblem
from toolpin.evidence.fetch import Fetcher, private_allowed
from toolpin.evidence.lookup import (
    KIND_MEMBERS,
    distrusted,
    entry_time,
    normalise_digest,
    policy_of,
    refuse_distrusted,
    verified_tree,
    verifier_of,
)
from toolpin.evidence.verify import RemoteTree, check_against_kept, entry_value
from toolpin.publog.checkpoint import Checkpoint, open_checkpoint, read_unverified
from toolpin.publog.merkle import HASH_SIZE, inclusion_proof, leaf_hash, verify_inclusion
from toolpin.publog.note import Verifier

if TYPE_CHECKING:
    from toolpin.publog.policy import Policy

MAX_ENTRY_BYTES: Final = 64 << 10
"""The largest entry a proof records (a crawler entry is about 1 KB)."""
MAX_NOTE_CHARS: Final = 16 << 10
MAX_PROOF_HASHES: Final = 64
"""An inclusion proof in a tree of up to 2**63 entries has at most 63 hashes."""


@dataclass(frozen=True, slots=True)
class LogProof:
    """Entry ``entry_index`` of the log, and its inclusion in a signed checkpoint."""

    checkpoint: str
    """The signed checkpoint note, verbatim."""
    entry_index: int
    entry: bytes
    inclusion: tuple[bytes, ...]

    @property
    def leaf_hash(self) -> bytes:
        return leaf_hash(self.entry)

    def head(self) -> Checkpoint:
        """The recorded checkpoint as written (its signature is not checked here)."""
        return read_unverified(self.checkpoint)

    def to_json(self) -> dict[str, Any]:
        """The lock's ``publicLog`` member (stable keys, docs/teamlock.md)."""
        return {
            "checkpoint": self.checkpoint,
            "entryIndex": self.entry_index,
            "leafHash": _b64(self.leaf_hash),
            "inclusion": [_b64(h) for h in self.inclusion],
            "entry": _b64(self.entry),
        }

    @classmethod
    def from_json(cls, value: object) -> LogProof:
        """Read a ``publicLog`` member; a malformed one is ``tampered``. The recorded
        ``leafHash`` must be the leaf hash of the recorded entry bytes."""
        bad = LogProblem("tampered", "its public-log proof is malformed")
        if not isinstance(value, dict):
            raise bad
        note, index, leaf = value.get("checkpoint"), value.get("entryIndex"), value.get("leafHash")
        path, entry = value.get("inclusion"), value.get("entry")
        if not isinstance(note, str) or not 0 < len(note) <= MAX_NOTE_CHARS:
            raise bad
        if type(index) is not int or index < 0:
            raise bad
        if not isinstance(path, list) or len(path) > MAX_PROOF_HASHES:
            raise bad
        if not isinstance(leaf, str) or not isinstance(entry, str):
            raise bad
        hashes = tuple(_unb64(h, bad) for h in path)
        raw = _unb64(entry, bad)
        if any(len(h) != HASH_SIZE for h in hashes) or len(raw) > MAX_ENTRY_BYTES:
            raise bad
        proof = cls(note, index, raw, hashes)
        if _unb64(leaf, bad) != proof.leaf_hash:
            raise LogProblem(
                "tampered", "its public-log proof records an entry that is not its leaf hash"
            )
        return proof


@dataclass(frozen=True, slots=True)
class Verified:
    """What :func:`verify_offline` established."""

    checkpoint: Checkpoint
    entry_index: int
    recorded_at: str
    """The entry's observation time (ISO UTC), "" when it has none."""
    signed: bool
    """The checkpoint's signature was checked with the log's key."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: object, bad: LogProblem) -> bytes:
    if not isinstance(text, str):
        raise bad
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise bad from None
    if _b64(raw) != text:
        raise bad
    return raw


def prove(
    log: Any,
    indices: Mapping[str, int],
    *,
    home: Path,
    timeout: float = 3.0,
    allow_private: bool | None = None,
) -> dict[str, LogProof]:
    """A :class:`LogProof` for each named entry index, all to the log's current
    checkpoint (``log`` is a :class:`~toolpin.evidence.LogRef`). Raises
    :class:`LogProblem` when the log cannot give verified proofs."""
    verifier = verifier_of(log.vkey)
    refuse_distrusted(state.load(home, verifier.name))
    out: dict[str, LogProof] = {}
    with Fetcher(log.url, timeout=timeout, allow_private=private_allowed(allow_private)) as f:
        tree = verified_tree(f, verifier, home, policy_of(log))
        note = _kept_note(home, verifier, tree.checkpoint)
        for name, index in indices.items():
            entry = tree.entry(index)  # proven included in the verified checkpoint
            if len(entry) > MAX_ENTRY_BYTES:
                raise LogProblem("tampered", f"entry {index} is larger than any entry toolpin logs")
            try:
                path = inclusion_proof(tree, index, tree.size)
            except (LogError, ValueError):
                raise LogProblem("tampered", f"the tiles cannot prove entry {index}") from None
            out[name] = LogProof(note, index, entry, tuple(path))
    return out


def _kept_note(home: Path, verifier: Verifier, checkpoint: Checkpoint) -> str:
    """The signed note of ``checkpoint``, as :func:`verified_tree` just kept it."""
    note = state.load(home, verifier.name).checkpoint
    try:
        kept = open_checkpoint(note, verifier) if note is not None else None
    except LogError:
        kept = None
    if kept is None or (kept.size, kept.root) != (checkpoint.size, checkpoint.root):
        raise LogProblem("unreachable", "the log changed while its proofs were read; try again")
    return note  # type: ignore[return-value]  # not None when kept is not None


def verify_offline(
    proof: LogProof,
    digest: str,
    *,
    vkey: str | None,
    kind: str = "surface",
    policy: Policy | None = None,
) -> Verified:
    """Check ``proof`` with nothing but the key: it shows that the log's signed checkpoint
    includes an entry recording ``digest``. ``vkey=None`` checks everything but the
    signature (the checkpoint as written). With a witness ``policy`` (and a key), the
    recorded checkpoint must carry its quorum's cosignatures. Raises :class:`LogProblem`
    (``bad-signature`` or ``tampered``)."""
    wanted = normalise_digest(digest)
    if vkey is not None:
        verifier = verifier_of(vkey)
        try:
            written = read_unverified(proof.checkpoint).origin
        except LogError:
            written = verifier.name  # malformed: the signature check below says so
        if written != verifier.name:
            raise LogProblem(
                "bad-signature",
                f"its public-log proof is from the log {written[:100]}, not from "
                f"{verifier.name}, the log of the key given",
            )
        try:
            checkpoint = open_checkpoint(proof.checkpoint, verifier)
        except LogError:
            raise LogProblem(
                "bad-signature",
                "its public-log proof's checkpoint is not signed by the log's key",
            ) from None
        if policy is not None:
            try:
                policy.check(proof.checkpoint, verifier)
            except LogError as exc:
                raise LogProblem(
                    "bad-signature",
                    f"its public-log proof's checkpoint is not witnessed as the policy "
                    f"requires: {exc.message}",
                ) from None
    else:
        try:
            checkpoint = read_unverified(proof.checkpoint)
        except LogError:
            raise LogProblem("tampered", "its public-log proof's checkpoint is malformed") from None
    if not verify_inclusion(
        proof.leaf_hash, proof.entry_index, checkpoint.size, proof.inclusion, checkpoint.root
    ):
        raise LogProblem(
            "tampered",
            f"its public-log proof does not include entry {proof.entry_index} in "
            f"checkpoint {checkpoint.size}",
        )
    value = entry_value(proof.entry)
    digests = value.get("digests")
    if not isinstance(digests, dict) or digests.get(KIND_MEMBERS[kind]) != wanted:
        raise LogProblem(
            "tampered",
            f"its public-log proof's entry {proof.entry_index} does not record these definitions",
        )
    return Verified(checkpoint, proof.entry_index, entry_time(value) or "", vkey is not None)


def consistent_now(
    log: Any,
    recorded: Sequence[str],
    *,
    home: Path,
    timeout: float = 3.0,
    allow_private: bool | None = None,
) -> Checkpoint:
    """The log's current checkpoint, proven to extend every recorded checkpoint note
    (each already verified with :func:`verify_offline`). Raises :class:`LogProblem`:
    ``fork`` or ``rollback`` (the log is marked distrusted, keeping the recorded
    checkpoint as evidence), or any problem of reading the log."""
    verifier = verifier_of(log.vkey)
    origin = verifier.name
    refuse_distrusted(state.load(home, origin))
    with Fetcher(log.url, timeout=timeout, allow_private=private_allowed(allow_private)) as f:
        tree = verified_tree(f, verifier, home, policy_of(log))
        seen: set[tuple[int, bytes]] = set()
        for note in recorded:
            try:
                old = open_checkpoint(note, verifier)
            except LogError:
                raise LogProblem(
                    "bad-signature", "a recorded checkpoint is not signed by the log's key"
                ) from None
            if (old.size, old.root) in seen:
                continue
            seen.add((old.size, old.root))
            _consistent(tree, old, note, home, origin)
    return tree.checkpoint


def _consistent(tree: RemoteTree, old: Checkpoint, note: str, home: Path, origin: str) -> None:
    now = tree.checkpoint
    if now.size < old.size:
        # A smaller signed tree after a larger one: the log was rolled back.
        kind, message = (
            "rollback",
            f"the log was rolled back: it serves checkpoint {now.size}, "
            f"older than checkpoint {old.size} the lock records",
        )
    else:
        verdict = check_against_kept(tree, old)
        if verdict is None:
            return
        kind = verdict[0]
        message = (
            f"the log is forked: its checkpoint {now.size} does not extend "
            f"checkpoint {old.size} the lock records"
        )
    with state.locked_state(home, origin):
        problem = distrusted(home, origin, kind, note, message)
    raise problem


__all__ = [
    "MAX_ENTRY_BYTES",
    "LogProof",
    "Verified",
    "consistent_now",
    "prove",
    "verify_offline",
]
