"""C2SP signed notes (``c2sp.org/signed-note``) with Ed25519 keys.

A signed note is a UTF-8 text ending in a newline, a blank line, then one or more
signature lines ``— <key name> base64(key ID || signature)`` (U+2014 em dash). The key ID is
the first four bytes of ``SHA-256(name || "\\n" || 0x01 || public key)``.

Key texts are those of Go's ``golang.org/x/mod/sumdb/note``:

* verifier key ``<name>+<hex key ID>+base64(0x01 || 32-byte public key)``;
* signer key ``PRIVATE+KEY+<name>+<hex key ID>+base64(0x01 || 32-byte seed)``.

Opening a note follows the specification: the text must be valid UTF-8 without control
characters other than newline; signatures from unknown keys (name and ID not both known)
are ignored; a known key whose signature does not verify rejects the whole note; at least
one known key must verify; more than :data:`MAX_SIGNATURES` signature lines is malformed.

Hand-written because no chosen dependency implements the format; the Ed25519 arithmetic is
``cryptography``'s.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from toolpin.errors import LogError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

# ``cryptography`` is imported where a signature is made or checked, not with this module:
# parsing keys and notes (and a lookup whose checkpoint is the one verified before) needs
# none of it.

ALG_ED25519 = 0x01
EM_DASH = "\u2014"
SIGNATURE_PREFIX = EM_DASH + " "
MAX_SIGNATURES = 100  # the specification requires at least 16; Go's reader stops at 100
MAX_NOTE_BYTES = 1 << 20

__all__ = [
    "ALG_ED25519",
    "EM_DASH",
    "MAX_SIGNATURES",
    "Note",
    "NoteError",
    "NoteSignature",
    "Signer",
    "Verifier",
    "key_id",
    "open_note",
    "sign_note",
    "valid_key_name",
]


class NoteError(LogError):
    """A signed note, or a key, that cannot be used."""


def valid_key_name(name: str) -> bool:
    """Non-empty, no Unicode spaces (nor control characters) and no ``+``."""
    return (
        bool(name)
        and "+" not in name
        and not any(ch.isspace() or ord(ch) < 0x20 or ch == "\x7f" for ch in name)
    )


def key_id(name: str, typed_public_key: bytes) -> int:
    """The 32-bit key ID: ``SHA-256(name || "\\n" || type || public key)[:4]`` big-endian."""
    digest = hashlib.sha256(name.encode("utf-8") + b"\n" + typed_public_key).digest()
    return int.from_bytes(digest[:4], "big")


def _b64decode(text: str) -> bytes:
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise NoteError("not valid base64") from None
    if base64.b64encode(raw).decode("ascii") != text:
        raise NoteError("not canonical base64")
    return raw


def _check_key(name: str, raw: bytes, what: str) -> None:
    """A key's name is valid and its ``what`` (public key, seed) is 32 bytes."""
    if not valid_key_name(name):
        raise NoteError("a key name must be non-empty, without spaces or '+'")
    if len(raw) != 32:
        raise NoteError(f"an Ed25519 {what} is 32 bytes")


def _key_fields(
    who: str,
    name: str,
    hex_id: str,
    key64: str,
    *,
    alg: int = ALG_ED25519,
    kind: str = "an Ed25519 (type 0x01) key",
    error: type[NoteError] | None = None,
) -> tuple[int, bytes]:
    """A key text's id and 32 key bytes (after the type byte ``alg``), checked as the text
    says them; ``who`` ("verifier", "signer") names the key in the errors, ``kind`` the
    key type, ``error`` the exception class (default :class:`NoteError`)."""
    fail = error or NoteError
    if not valid_key_name(name):
        raise fail(f"the {who} key's name is empty or has spaces or '+'")
    if len(hex_id) != 8 or any(c not in "0123456789abcdef" for c in hex_id):
        raise fail(f"the {who} key's id is not 8 lower-case hex digits")
    try:
        typed = _b64decode(key64)
    except NoteError:
        raise fail(f"the {who} key's key part is not valid base64") from None
    if len(typed) != 33 or typed[0] != alg:
        raise fail(f"the {who} key is not {kind}")
    return int(hex_id, 16), typed[1:]


@dataclass(frozen=True)
class Verifier:
    """An Ed25519 verifier key of a signed-note signer."""

    name: str
    key_id: int
    public_key: bytes  # 32 bytes

    @classmethod
    def from_text(cls, text: str) -> Verifier:
        """Parse ``<name>+<hex key ID>+base64(0x01 || public key)``."""
        text = text.strip()
        parts = text.split("+", 2)
        if len(parts) != 3:
            raise NoteError("a verifier key has the form <name>+<key id>+<base64 key>")
        name, hex_id, key64 = parts
        wanted_id, raw = _key_fields("verifier", name, hex_id, key64)
        if key_id(name, bytes([ALG_ED25519]) + raw) != wanted_id:
            raise NoteError("the verifier key's id does not match its name and key")
        return cls(name=name, key_id=wanted_id, public_key=raw)

    @classmethod
    def from_public_key(cls, name: str, public_key: bytes) -> Verifier:
        _check_key(name, public_key, "public key")
        return cls(
            name=name, key_id=key_id(name, bytes([ALG_ED25519]) + public_key), public_key=public_key
        )

    @property
    def text(self) -> str:
        typed = bytes([ALG_ED25519]) + self.public_key
        return f"{self.name}+{self.key_id:08x}+{base64.b64encode(typed).decode('ascii')}"

    def verify(self, message: bytes, signature: bytes) -> bool:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True


@dataclass(frozen=True)
class Signer:
    """An Ed25519 signer key. Its ``repr`` never shows the seed."""

    name: str
    key_id: int
    seed: bytes = field(repr=False)

    @classmethod
    def generate(cls, name: str) -> Signer:
        seed = _private_key_class().generate().private_bytes_raw()
        return cls.from_seed(name, seed)

    @classmethod
    def from_seed(cls, name: str, seed: bytes) -> Signer:
        _check_key(name, seed, "seed")
        public = _public_from_seed(seed)
        return cls(name=name, key_id=key_id(name, bytes([ALG_ED25519]) + public), seed=seed)

    @classmethod
    def from_text(cls, text: str) -> Signer:
        """Parse ``PRIVATE+KEY+<name>+<hex key ID>+base64(0x01 || seed)``."""
        parts = text.strip().split("+", 4)
        if len(parts) != 5 or parts[0] != "PRIVATE" or parts[1] != "KEY":
            raise NoteError("not a signer key (expected PRIVATE+KEY+<name>+<key id>+<base64 seed>)")
        _, _, name, hex_id, key64 = parts
        wanted_id, raw = _key_fields("signer", name, hex_id, key64)
        signer = cls.from_seed(name, raw)
        if signer.key_id != wanted_id:
            raise NoteError("the signer key's id does not match its name and key")
        return signer

    @property
    def text(self) -> str:
        """The secret key text. Keep it out of logs, repositories and the log directory."""
        typed = bytes([ALG_ED25519]) + self.seed
        encoded = base64.b64encode(typed).decode("ascii")
        return f"PRIVATE+KEY+{self.name}+{self.key_id:08x}+{encoded}"

    @property
    def verifier(self) -> Verifier:
        return Verifier(name=self.name, key_id=self.key_id, public_key=_public_from_seed(self.seed))

    def sign(self, message: bytes) -> bytes:
        return _private_key_class().from_private_bytes(self.seed).sign(message)


def _private_key_class() -> type[Ed25519PrivateKey]:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey


def _public_from_seed(seed: bytes) -> bytes:
    # Imported here: verifying (the proxy's lookups) never needs the serialization package.
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return (
        _private_key_class()
        .from_private_bytes(seed)
        .public_key()
        .public_bytes(Encoding.Raw, PublicFormat.Raw)
    )


@dataclass(frozen=True)
class NoteSignature:
    """One signature line: key name, key ID and the raw signature bytes."""

    name: str
    key_id: int
    signature: bytes

    @property
    def line(self) -> str:
        blob = self.key_id.to_bytes(4, "big") + self.signature
        return f"{SIGNATURE_PREFIX}{self.name} {base64.b64encode(blob).decode('ascii')}\n"


@dataclass(frozen=True)
class Note:
    """An opened note: its text and the signatures by known keys that verified."""

    text: str
    verified: tuple[NoteSignature, ...]
    unverified: tuple[NoteSignature, ...]


def _check_text(text: str) -> None:
    if not text.endswith("\n"):
        raise NoteError("a note text must end with a newline")
    if any(ord(ch) < 0x20 and ch != "\n" for ch in text):
        raise NoteError("a note must not contain control characters other than newline")


def sign_note(text: str, signers: Iterable[Signer]) -> str:
    """The signed note: ``text`` + blank line + one signature line per signer."""
    _check_text(text)
    message = text.encode("utf-8")
    lines = [NoteSignature(s.name, s.key_id, s.sign(message)).line for s in signers]
    if not lines:
        raise NoteError("a signed note needs at least one signer")
    return text + "\n" + "".join(lines)


def split_note(message: bytes | str) -> tuple[str, list[NoteSignature]]:
    """Parse a signed note without checking any signature: ``(text, signature lines)``."""
    if isinstance(message, str):
        try:
            raw = message.encode("utf-8")
        except UnicodeEncodeError:
            raise NoteError("malformed note: not valid UTF-8") from None
    else:
        raw = message
    if len(raw) > MAX_NOTE_BYTES:
        raise NoteError("malformed note: larger than 1 MiB")
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NoteError("malformed note: not valid UTF-8") from None
    if any(ord(ch) < 0x20 and ch != "\n" for ch in decoded):
        raise NoteError("malformed note: control characters other than newline")
    split = decoded.rfind("\n\n")
    if split < 0 or not decoded.endswith("\n"):
        raise NoteError("malformed note: no blank line before signatures")
    text = decoded[: split + 1]
    sig_lines = decoded[split + 2 :].split("\n")[:-1]
    if not sig_lines:
        raise NoteError("malformed note: no signature lines")
    if len(sig_lines) > MAX_SIGNATURES:
        raise NoteError(f"malformed note: more than {MAX_SIGNATURES} signatures")
    signatures = []
    for line in sig_lines:
        if not line.startswith(SIGNATURE_PREFIX):
            raise NoteError("malformed note: a signature line does not start with '— '")
        name, sep, sig64 = line[len(SIGNATURE_PREFIX) :].partition(" ")
        if not sep or not valid_key_name(name) or " " in sig64:
            raise NoteError("malformed note: bad signature line")
        try:
            blob = _b64decode(sig64)
        except NoteError:
            raise NoteError("malformed note: a signature is not valid base64") from None
        if len(blob) < 5:
            raise NoteError("malformed note: a signature is too short")
        signatures.append(
            NoteSignature(name=name, key_id=int.from_bytes(blob[:4], "big"), signature=blob[4:])
        )
    return text, signatures


def open_note(message: bytes | str, verifiers: Sequence[Verifier]) -> Note:
    """Parse ``message`` and check its signatures against ``verifiers`` (the known keys).

    Raises :class:`NoteError` when the note is malformed, when a known key's signature does
    not verify, or when no known key signed it.
    """
    text, signatures = split_note(message)
    known: dict[tuple[str, int], Verifier] = {}
    for v in verifiers:
        if (v.name, v.key_id) in known and known[(v.name, v.key_id)] != v:
            raise NoteError(f"ambiguous key {v.name}+{v.key_id:08x}")
        known[(v.name, v.key_id)] = v
    message_bytes = text.encode("utf-8")
    verified: list[NoteSignature] = []
    unverified: list[NoteSignature] = []
    seen: set[tuple[str, int]] = set()
    for sig in signatures:
        verifier = known.get((sig.name, sig.key_id))
        if verifier is None:
            if sig not in unverified:
                unverified.append(sig)
            continue
        if not verifier.verify(message_bytes, sig.signature):
            raise NoteError(f"invalid signature for key {sig.name}+{sig.key_id:08x}")
        if (sig.name, sig.key_id) not in seen:
            seen.add((sig.name, sig.key_id))
            verified.append(sig)
    if not verified:
        raise NoteError("note has no verifiable signatures (not signed by the pinned key)")
    return Note(text=text, verified=tuple(verified), unverified=tuple(unverified))
