"""C2SP witness cosignatures (``c2sp.org/tlog-cosignature``, Ed25519 ``cosignature/v1``).

A cosignature is a signed-note signature line added to a checkpoint by a witness::

    — <witness name> base64(key ID || timestamp (8 bytes, big-endian) || Ed25519 signature)

The key ID is ``SHA-256(name || "\\n" || 0x04 || public key)[:4]`` (type byte 0x04, where a
log's own note key uses 0x01) and the signed message is::

    cosignature/v1\\n
    time <timestamp, decimal, no leading zeroes>\\n
    <the whole checkpoint body, extension lines included>

Key texts follow the note forms with type byte 0x04:

* witness verifier key ``<name>+<hex key ID>+base64(0x04 || 32-byte public key)``;
* witness signer key ``PRIVATE+KEY+<name>+<hex key ID>+base64(0x04 || 32-byte seed)``.

Verification ignores signature lines whose name and key ID match no configured witness
(the log's own signature among them); a line that does match a witness but is malformed
or does not verify refuses the whole note, as :func:`toolpin.publog.note.open_note` does
for log keys. Go's ``golang.org/x/mod/sumdb/note`` only knows type 0x01, so it ignores
these lines as unknown keys (see ``docs/witness.md``).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from toolpin.publog.note import (
    SIGNATURE_PREFIX,
    NoteError,
    NoteSignature,
    _key_fields,
    split_note,
    valid_key_name,
)

ALG_COSIGNATURE_V1 = 0x04
COSIGNATURE_HEADER = b"cosignature/v1\n"
MAX_TIMESTAMP = (1 << 63) - 1
_BLOB_BYTES = 4 + 8 + 64  # key ID, timestamp, Ed25519 signature

__all__ = [
    "ALG_COSIGNATURE_V1",
    "CosignatureError",
    "WitnessKey",
    "WitnessSigner",
    "cosign",
    "cosignature_message",
    "is_of",
    "parse_cosignature_lines",
    "parse_witness_vkey",
    "verify_cosignatures",
    "witness_key_id",
]


class CosignatureError(NoteError):
    """A witness key or cosignature that cannot be used."""


def witness_key_id(name: str, public: bytes) -> bytes:
    """The 4-byte key ID of a cosignature/v1 key: ``SHA-256(name || "\\n" || 0x04 || key)[:4]``."""
    return hashlib.sha256(
        name.encode("utf-8") + b"\n" + bytes([ALG_COSIGNATURE_V1]) + public
    ).digest()[:4]


def cosignature_message(body: bytes, timestamp: int) -> bytes:
    """The bytes a witness signs: header line, time line, then the checkpoint body."""
    if not 0 <= timestamp <= MAX_TIMESTAMP:
        raise CosignatureError("a cosignature timestamp is out of range")
    if not body.endswith(b"\n"):
        raise CosignatureError("a checkpoint body must end with a newline")
    return COSIGNATURE_HEADER + b"time " + str(timestamp).encode("ascii") + b"\n" + body


def _key_parts(who: str, name: str, hex_id: str, key64: str) -> tuple[bytes, bytes]:
    key_id, raw = _key_fields(
        f"witness {who}",
        name,
        hex_id,
        key64,
        alg=ALG_COSIGNATURE_V1,
        kind="a cosignature/v1 (type 0x04) Ed25519 key",
        error=CosignatureError,
    )
    return key_id.to_bytes(4, "big"), raw


@dataclass(frozen=True)
class WitnessKey:
    """A witness's cosignature/v1 verifier key."""

    name: str
    key_id: bytes  # 4 bytes
    public: bytes  # 32 bytes

    @classmethod
    def from_public_key(cls, name: str, public: bytes) -> WitnessKey:
        if not valid_key_name(name):
            raise CosignatureError("a witness name must be non-empty, without spaces or '+'")
        if len(public) != 32:
            raise CosignatureError("an Ed25519 public key is 32 bytes")
        return cls(name=name, key_id=witness_key_id(name, public), public=public)

    @property
    def text(self) -> str:
        """The vkey text ``<name>+<hex key ID>+base64(0x04 || public key)``."""
        typed = base64.b64encode(bytes([ALG_COSIGNATURE_V1]) + self.public).decode("ascii")
        return f"{self.name}+{self.key_id.hex()}+{typed}"

    def verify(self, body: bytes, timestamp: int, signature: bytes) -> bool:
        try:
            message = cosignature_message(body, timestamp)
            Ed25519PublicKey.from_public_bytes(self.public).verify(signature, message)
        except (InvalidSignature, ValueError, CosignatureError):
            return False
        return True


def parse_witness_vkey(text: str) -> WitnessKey:
    """Parse ``<name>+<hex key ID>+base64(0x04 || public key)``; the ID must match."""
    parts = text.strip().split("+", 2)
    if len(parts) != 3:
        raise CosignatureError(
            "a witness key has the form <name>+<key id>+<base64 key> (type 0x04)"
        )
    name, hex_id, key64 = parts
    wanted, public = _key_parts("verifier", name, hex_id, key64)
    if witness_key_id(name, public) != wanted:
        raise CosignatureError("the witness key's id does not match its name and key")
    return WitnessKey(name=name, key_id=wanted, public=public)


@dataclass(frozen=True)
class WitnessSigner:
    """A witness's signing key. Its ``repr`` never shows the seed."""

    name: str
    seed: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if not valid_key_name(self.name):
            raise CosignatureError("a witness name must be non-empty, without spaces or '+'")
        if len(self.seed) != 32:
            raise CosignatureError("an Ed25519 seed is 32 bytes")

    @classmethod
    def generate(cls, name: str) -> WitnessSigner:
        return cls(name=name, seed=Ed25519PrivateKey.generate().private_bytes_raw())

    @classmethod
    def from_text(cls, text: str) -> WitnessSigner:
        """Parse ``PRIVATE+KEY+<name>+<hex key ID>+base64(0x04 || seed)``."""
        parts = text.strip().split("+", 4)
        if len(parts) != 5 or parts[0] != "PRIVATE" or parts[1] != "KEY":
            raise CosignatureError(
                "not a witness signer key (expected PRIVATE+KEY+<name>+<key id>+<base64 seed>)"
            )
        _, _, name, hex_id, key64 = parts
        wanted, seed = _key_parts("signer", name, hex_id, key64)
        signer = cls(name=name, seed=seed)
        if signer.key.key_id != wanted:
            raise CosignatureError("the witness signer key's id does not match its name and key")
        return signer

    @property
    def key(self) -> WitnessKey:
        public = (
            Ed25519PrivateKey.from_private_bytes(self.seed)
            .public_key()
            .public_bytes(Encoding.Raw, PublicFormat.Raw)
        )
        return WitnessKey.from_public_key(self.name, public)

    @property
    def text(self) -> str:
        """The secret key text. Keep it out of logs and repositories."""
        typed = base64.b64encode(bytes([ALG_COSIGNATURE_V1]) + self.seed).decode("ascii")
        return f"PRIVATE+KEY+{self.name}+{self.key.key_id.hex()}+{typed}"

    def cosign(self, body: bytes, timestamp: int) -> str:
        return cosign(body, self.name, self.seed, timestamp)


def cosign(body: bytes, name: str, private_key: bytes | Ed25519PrivateKey, timestamp: int) -> str:
    """One cosignature line ``— name base64(key ID || timestamp || signature)\\n`` over the
    checkpoint ``body`` (the note text, without its signature lines)."""
    key = (
        private_key
        if isinstance(private_key, Ed25519PrivateKey)
        else Ed25519PrivateKey.from_private_bytes(private_key)
    )
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    signer_key = WitnessKey.from_public_key(name, public)
    signature = key.sign(cosignature_message(body, timestamp))
    blob = signer_key.key_id + timestamp.to_bytes(8, "big") + signature
    return f"{SIGNATURE_PREFIX}{name} {base64.b64encode(blob).decode('ascii')}\n"


def _index(witnesses: Iterable[WitnessKey]) -> dict[tuple[str, int], WitnessKey]:
    known: dict[tuple[str, int], WitnessKey] = {}
    for w in witnesses:
        slot = (w.name, int.from_bytes(w.key_id, "big"))
        if slot in known and known[slot] != w:
            raise CosignatureError(f"ambiguous witness key {w.name}+{w.key_id.hex()}")
        known[slot] = w
    return known


def _check_one(witness: WitnessKey, body: bytes, sig: NoteSignature) -> int:
    """The timestamp of ``sig``, a line of a known witness, or a refusal."""
    blob = sig.signature  # timestamp || signature (the key ID is already split off)
    if len(blob) != _BLOB_BYTES - 4:
        raise CosignatureError(f"malformed cosignature from witness {witness.name}")
    timestamp = int.from_bytes(blob[:8], "big")
    if timestamp > MAX_TIMESTAMP:
        raise CosignatureError(f"cosignature from witness {witness.name} has an invalid time")
    if not witness.verify(body, timestamp, blob[8:]):
        raise CosignatureError(f"invalid cosignature from witness {witness.name}")
    return timestamp


def verify_cosignatures(note_text: bytes, witnesses: Sequence[WitnessKey]) -> dict[str, int]:
    """``{witness name: timestamp}`` for every configured witness whose cosignature on the
    note's body verifies. Lines of unknown keys are ignored; a malformed or invalid line of
    a known witness refuses the note (:class:`CosignatureError`). The log's own signature is
    not checked here: open the checkpoint with the log key too."""
    text, signatures = split_note(note_text)
    body = text.encode("utf-8")
    known = _index(witnesses)
    found: dict[str, int] = {}
    for sig in signatures:
        witness = known.get((sig.name, sig.key_id))
        if witness is None:
            continue
        timestamp = _check_one(witness, body, sig)
        found.setdefault(witness.name, timestamp)
    return found


def parse_cosignature_lines(data: bytes) -> list[NoteSignature]:
    """The signature lines of a witness's ``add-checkpoint`` answer, checked for shape only
    (each ``— <name> <base64>\\n``). Which of them verify is for
    :func:`verify_cosignatures` to say once they are appended to the checkpoint."""
    if not data or not data.endswith(b"\n"):
        raise CosignatureError("a witness answer must be signature lines ending in a newline")
    placeholder = b"x\n\n"  # split_note parses signature lines after a blank line
    try:
        _, signatures = split_note(placeholder + data)
    except NoteError as exc:
        raise CosignatureError(f"a witness answer is not signature lines ({exc.message})") from None
    return signatures


def is_of(signature: NoteSignature, key: WitnessKey) -> bool:
    """Whether a signature line names ``key`` (its name and cosignature key ID)."""
    return signature.name == key.name and signature.key_id == int.from_bytes(key.key_id, "big")
