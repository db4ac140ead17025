"""C2SP tlog checkpoints (``c2sp.org/tlog-checkpoint``): a tree head inside a signed note.

Note text::

    <origin>\\n
    <tree size, decimal, no leading zeroes>\\n
    <base64 RFC 6962 root hash>\\n
    [<extension line>\\n ...]

A checkpoint is only ever trusted through :func:`open_checkpoint`, which checks the
signature of one pinned verifier key and that the origin is the one expected (by default
the key's name, as toolpin's keys are named after their log's origin).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from toolpin.errors import LogError
from toolpin.publog.merkle import EMPTY_ROOT, HASH_SIZE
from toolpin.publog.note import Signer, Verifier, open_note, sign_note, split_note

MAX_TREE_SIZE = (1 << 63) - 1

__all__ = [
    "Checkpoint",
    "CheckpointError",
    "open_checkpoint",
    "parse_checkpoint_body",
    "sign_checkpoint",
]


class CheckpointError(LogError):
    """A checkpoint that is malformed, unsigned by the pinned key, or for another log."""


@dataclass(frozen=True)
class Checkpoint:
    """A log's tree head: origin, tree size, root hash and optional extension lines."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.origin or any(ord(c) < 0x20 for c in self.origin):
            raise CheckpointError("a checkpoint origin must be a non-empty single line")
        if not 0 <= self.size <= MAX_TREE_SIZE:
            raise CheckpointError("a checkpoint tree size is out of range")
        if len(self.root) != HASH_SIZE:
            raise CheckpointError("a checkpoint root hash is 32 bytes")
        if self.size == 0 and self.root != EMPTY_ROOT:
            raise CheckpointError("an empty tree's root must be SHA-256 of nothing")
        for line in self.extensions:
            if not line or any(ord(c) < 0x20 for c in line):
                raise CheckpointError("checkpoint extension lines must be non-empty lines")

    @property
    def root_b64(self) -> str:
        return base64.b64encode(self.root).decode("ascii")

    def body(self) -> str:
        """The note text that gets signed."""
        lines = [self.origin, str(self.size), self.root_b64, *self.extensions]
        return "".join(line + "\n" for line in lines)


def parse_checkpoint_body(text: str) -> Checkpoint:
    """Parse an (already verified) note text into a :class:`Checkpoint`."""
    if not text.endswith("\n"):
        raise CheckpointError("malformed checkpoint: the text must end with a newline")
    lines = text[:-1].split("\n")
    if len(lines) < 3:
        raise CheckpointError("malformed checkpoint: fewer than three lines")
    origin, size_text, root_text, *extensions = lines
    if not size_text.isascii() or not size_text.isdigit():
        raise CheckpointError("malformed checkpoint: the tree size is not a decimal number")
    if size_text != "0" and size_text.startswith("0"):
        raise CheckpointError("malformed checkpoint: the tree size has leading zeroes")
    if len(size_text) > 19 or int(size_text) > MAX_TREE_SIZE:
        raise CheckpointError("malformed checkpoint: the tree size is out of range")
    try:
        root = base64.b64decode(root_text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise CheckpointError("malformed checkpoint: the root hash is not base64") from None
    if len(root) != HASH_SIZE or base64.b64encode(root).decode("ascii") != root_text:
        raise CheckpointError("malformed checkpoint: the root hash is not 32 bytes of base64")
    return Checkpoint(origin=origin, size=int(size_text), root=root, extensions=tuple(extensions))


def sign_checkpoint(checkpoint: Checkpoint, signer: Signer) -> str:
    """The signed checkpoint note text (the ``checkpoint`` file)."""
    if checkpoint.origin != signer.name:
        raise CheckpointError("the signer key's name must be the log origin")
    return sign_note(checkpoint.body(), [signer])


def open_checkpoint(
    note: bytes | str, verifier: Verifier, *, origin: str | None = None
) -> Checkpoint:
    """Verify ``note`` with the pinned ``verifier`` only and return its checkpoint.

    ``origin`` defaults to the verifier's key name. Raises :class:`CheckpointError`.
    """
    try:
        opened = open_note(note, [verifier])
    except LogError as exc:
        raise CheckpointError(f"checkpoint rejected: {exc.message}") from None
    checkpoint = parse_checkpoint_body(opened.text)
    expected = verifier.name if origin is None else origin
    if checkpoint.origin != expected:
        raise CheckpointError("the checkpoint's origin is not the log the key belongs to")
    return checkpoint


def read_unverified(note: bytes | str) -> Checkpoint:
    """Parse a checkpoint note without checking signatures (for building proofs only)."""
    text, _ = split_note(note)
    return parse_checkpoint_body(text)
