"""toolpin's lockfile: readable pinned definitions whose hashes verify themselves.

One format serves ``toolpin pin`` (an offline export, one entry) and ``toolpin lock``
(a team's servers, one entry per server keyed by its config name)::

    {
      "toolpinLock": 1,
      "about": "...",
      "servers": {
        "<name>": {
          "source": "...", "pinnedAt": "...",          # where / when (pin)
          "id": "<server id>", "package": {...},       # team lock
          "server": {"name", "version", "protocolVersion"},   # identity, optional
          "surfaceHash": "<hex>",
          "tools":  {"setHash": "<hex>", "items": [{"name", "hash", "definition"}]},
          "prompts": {...}, "resources": {... "uri" ...},
          "resourceTemplates": {... "uriTemplate" ...},
          "instructions": {"hash": "<hex>|null", "text": "...|null"},
          "listingSha256": "<hex>",                     # raw bytes of the pinned export
          "publicLog": {...}                            # team lock, optional: a log's proof
        }
      },
      "skills": {"root": "...", "items": {...}},        # optional: toolpin lock --skills
      "digest": "sha256:<hex>"
    }

A listing or ``instructions`` member that is absent was not observed (unknown). Reading a
lock re-hashes every stored definition and checks every set hash: a lock edited by hand
so that it no longer matches its own hashes is refused (:class:`LockfileError`, exit 2).
``digest`` covers the file's exact bytes (with the digest itself zeroed); when it matches,
the file is exactly as toolpin wrote it, which lets an unchanged export be checked without
re-hashing anything. A lock whose bytes were reformatted but whose hashes still agree is
accepted on the slow path.

``publicLog`` (written by ``toolpin lock --log``) is the proof that a public log recorded
the entry's ``surfaceHash``: a signed checkpoint, the entry's bytes and leaf hash, and the
inclusion proof (see docs/teamlock.md). It is optional, so the format version stays 1; it
is read here only as an object (kept in :attr:`LockEntry.extra`) and verified with the
log's key by ``lock --check`` (:mod:`toolpin.evidence.proofs`).

``skills`` (written by ``toolpin lock --skills DIR``) is optional too: a lock without it
has exactly the bytes it always had. It is kept here as parsed JSON
(:attr:`Lockfile.skills`) and verified item by item by :mod:`toolpin.skills.lock`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from toolpin.core.canonical import (
    EMPTY_SET_HASH,
    JSONValue,
    canonical_many_parsed,
    instructions_hash,
    parse_json,
    sorted_members,
)
from toolpin.core.render import visible
from toolpin.core.snapshot import KINDS, Definition, Identity, Kind, Listing, Snapshot
from toolpin.errors import InputError, JSONError, ListingError, LockfileError
from toolpin.util.fs import atomic_write, read_input

FORMAT_KEY: Final = "toolpinLock"
FORMAT_VERSION: Final = 1
ABOUT: Final = (
    "Written by toolpin. Pinned MCP definitions: each one is hashed (RFC 8785 + SHA-256) "
    "and checked against its hash when read, so edit it only with `toolpin pin` or "
    "`toolpin lock`. Review changes to this file like a dependency update."
)
SKILLS: Final = "skills"
"""The optional top-level member holding a project's skills (``toolpin lock --skills``)."""
PUBLIC_LOG: Final = "publicLog"
"""The optional lock entry member holding a public log's proof of the entry."""
_ZERO_DIGEST: Final = "sha256:" + "0" * 64
_DIGEST_TAIL: Final = re.compile(rb',\n  "digest": "sha256:([0-9a-f]{64})"\n}\n\Z')


@dataclass(frozen=True)
class LockEntry:
    """One server in a lock: its snapshot plus where it came from."""

    snapshot: Snapshot
    source: str | None = None
    pinned_at: str | None = None
    server_id: str | None = None
    package: Mapping[str, Any] | None = None
    listing_sha256: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Lockfile:
    """A verified lock: every entry's hashes were checked (or the bytes are toolpin's own)."""

    servers: Mapping[str, LockEntry]
    intact: bool
    """True when the file's bytes are exactly what toolpin wrote (the digest matched)."""
    skills: Mapping[str, Any] | None = None
    """The optional ``skills`` member as parsed (verified by :mod:`toolpin.skills.lock`)."""


# ----------------------------------------------------------------------------------- write


def _listing_json(listing: Listing) -> dict[str, Any]:
    key = listing.kind.key_member
    return {
        "setHash": listing.set_hash,
        "items": [
            {key: d.key, "hash": d.hash, "definition": sorted_members(d.value)}
            for d in listing.items
        ],
    }


def entry_json(entry: LockEntry) -> dict[str, Any]:
    """The JSON form of one lock entry (member order is part of the format)."""
    snap = entry.snapshot
    out: dict[str, Any] = {}
    if entry.source is not None:
        out["source"] = entry.source
    if entry.pinned_at is not None:
        out["pinnedAt"] = entry.pinned_at
    if entry.server_id is not None:
        out["id"] = entry.server_id
    if entry.package is not None:
        out["package"] = dict(entry.package)
    if snap.identity is not None:
        out["server"] = snap.identity.to_json()
    out["surfaceHash"] = snap.surface_hash()
    for kind in KINDS:
        listing = snap.listing(kind)
        if listing is not None:
            out[kind.list_member] = _listing_json(listing)
    if snap.instructions_known:
        out["instructions"] = {"hash": snap.instructions_hash, "text": snap.instructions}
    if entry.listing_sha256 is not None:
        out["listingSha256"] = entry.listing_sha256
    out.update(entry.extra)
    return out


def render_lock(
    servers: Mapping[str, LockEntry], *, skills: Mapping[str, Any] | None = None
) -> bytes:
    """The exact bytes of a lock holding ``servers`` (sorted by name) and, when given,
    the ``skills`` member, digest included."""
    doc: dict[str, Any] = {
        FORMAT_KEY: FORMAT_VERSION,
        "about": ABOUT,
        "servers": {name: entry_json(servers[name]) for name in sorted(servers)},
    }
    if skills is not None:
        doc[SKILLS] = skills
    return dumps_with_digest(doc)


def dumps_with_digest(doc: Mapping[str, Any]) -> bytes:
    """Pretty JSON of ``doc`` with a last top-level ``digest`` member over the file's bytes.

    The digest is SHA-256 of the bytes with the digest itself written as zeros; see
    :func:`bytes_intact`.
    """
    body = {**doc, "digest": _ZERO_DIGEST}
    try:
        text = json.dumps(body, ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    except ValueError as exc:  # pragma: no cover - values come from the strict parser
        raise LockfileError(f"cannot serialise: {exc}") from None
    data = _encode(text)
    digest = hashlib.sha256(data).hexdigest()
    tail = _tail(_ZERO_DIGEST)
    return data[: len(data) - len(tail)] + _tail(f"sha256:{digest}")


def _tail(digest: str) -> bytes:
    return f',\n  "digest": "{digest}"\n}}\n'.encode()


def _encode(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise LockfileError(
            "cannot write a lock holding an unpaired surrogate (the listing has no strict form)"
        ) from None


def write_lock(
    path: Path, servers: Mapping[str, LockEntry], *, skills: Mapping[str, Any] | None = None
) -> None:
    """Write a lock atomically (temp file + fsync + rename)."""
    try:
        atomic_write(path, render_lock(servers, skills=skills))
    except OSError as exc:
        raise LockfileError(f"cannot write {path}: {exc.strerror or exc}") from None


# ------------------------------------------------------------------------------------ read


def is_toolpin_lock(doc: JSONValue) -> bool:
    """Whether a parsed document claims to be a toolpin lock."""
    return isinstance(doc, dict) and FORMAT_KEY in doc


def bytes_intact(data: bytes) -> bool:
    """True when ``data`` is exactly what toolpin wrote (its digest matches its bytes)."""
    match = _DIGEST_TAIL.search(data)
    if match is None:
        return False
    start = match.start()
    body = data[:start] + _tail(_ZERO_DIGEST)
    return hashlib.sha256(body).hexdigest() == match.group(1).decode()


def read_lock(path: Path, *, data: bytes | None = None) -> Lockfile:
    """Read and verify a toolpin lock. Raises :class:`LockfileError` (exit 2) on any fault."""
    if data is None:
        data = read_bytes(path)
    try:
        doc = parse_json(data)
    except JSONError as exc:
        raise LockfileError(f"{path} is not valid JSON: {exc.message}") from None
    return lock_from_json(doc, path=path, intact=bytes_intact(data))


def read_bytes(path: Path, error: type[InputError] = LockfileError) -> bytes:
    """Read a file through the bounded reader; faults raise ``error`` (one line, exit 2)."""
    return read_input(path, error=error)


def lock_from_json(
    doc: JSONValue, *, path: Path, intact: bool = False, trusted: bool = False
) -> Lockfile:
    """Verify a parsed lock document. ``trusted=True`` takes the recorded hashes without
    re-hashing: only for bytes verified in full before (:mod:`toolpin.lockfile.verified`)."""
    if not isinstance(doc, dict) or FORMAT_KEY not in doc:
        raise LockfileError(f"{path} is not a toolpin lockfile")
    version = doc[FORMAT_KEY]
    if type(version) is not int or version != FORMAT_VERSION:
        raise LockfileError(
            f"{path} is toolpin lockfile version {version!r}; this toolpin reads version 1",
            advice="Upgrade toolpin, or re-create the lock.",
        )
    servers = doc.get("servers")
    if not isinstance(servers, dict):
        raise LockfileError(f"{path} has no servers object")
    entries = {}
    for name, raw in servers.items():
        entries[name] = entry_from_json(raw, path=path, name=name, trusted=trusted)
    skills = doc.get(SKILLS)
    if skills is not None and not isinstance(skills, dict):
        raise LockfileError(f"{path}: skills must be an object")
    return Lockfile(servers=entries, intact=intact, skills=skills)


def _fail(path: Path, name: str, what: str) -> LockfileError:
    return LockfileError(
        f"{path}: server {visible(name)!r}: {what}",
        advice="Was the lock edited by hand? Re-create it with `toolpin pin` or `toolpin lock`.",
    )


def _str_or_none(raw: Mapping[str, JSONValue], key: str, path: Path, name: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise _fail(path, name, f"{key} must be a string")
    return value


def entry_from_json(raw: JSONValue, *, path: Path, name: str, trusted: bool = False) -> LockEntry:
    """Read one entry. ``trusted=True`` skips re-hashing the definitions: only for bytes
    known to be toolpin's own (:func:`bytes_intact`), parsed with :func:`parse_json` or
    ``json.loads``."""
    if not isinstance(raw, dict):
        raise _fail(path, name, "the entry is not an object")
    listings: dict[Kind, Listing] = {}
    for kind in KINDS:
        member = kind.list_member
        if member in raw:
            if trusted:
                listings[kind] = _trusted_listing(kind, raw[member])
            else:
                listings[kind] = _listing_from_json(kind, raw[member], path=path, name=name)
    identity = None
    if "server" in raw:
        identity = _identity_from_json(raw["server"], path=path, name=name)
    instructions: str | None = None
    known = False
    if "instructions" in raw:
        block = raw["instructions"]
        if not isinstance(block, dict):
            raise _fail(path, name, "instructions must be an object")
        text = block.get("text")
        if text is not None and not isinstance(text, str):
            raise _fail(path, name, "instructions.text must be a string or null")
        if not trusted and block.get("hash") != instructions_hash(text):
            raise _fail(path, name, "the instructions do not match their hash")
        instructions, known = text, True
    snap = Snapshot.of_listings(
        listings, instructions=instructions, instructions_known=known, identity=identity
    )
    if not trusted and raw.get("surfaceHash") != snap.surface_hash():
        raise _fail(path, name, "the entry does not match its surfaceHash")
    package = raw.get("package")
    if package is not None and not isinstance(package, dict):
        raise _fail(path, name, "package must be an object")
    listing_sha = _str_or_none(raw, "listingSha256", path, name)
    if PUBLIC_LOG in raw and not isinstance(raw[PUBLIC_LOG], dict):
        raise _fail(path, name, f"{PUBLIC_LOG} must be an object")
    known_keys = {
        "source", "pinnedAt", "id", "package", "server", "surfaceHash", "instructions",
        "listingSha256", *(k.list_member for k in KINDS),
    }  # fmt: skip
    return LockEntry(
        snapshot=snap,
        source=_str_or_none(raw, "source", path, name),
        pinned_at=_str_or_none(raw, "pinnedAt", path, name),
        server_id=_str_or_none(raw, "id", path, name),
        package=package,
        listing_sha256=listing_sha,
        extra={k: v for k, v in raw.items() if k not in known_keys},
    )


def _trusted_listing(kind: Kind, raw: Any) -> Listing:
    key = kind.key_member
    items = tuple(
        Definition(key=item[key], hash=item["hash"], value=item["definition"])
        for item in raw["items"]
    )
    return Listing(kind=kind, items=items, set_hash=raw["setHash"])


def _listing_from_json(kind: Kind, raw: JSONValue, *, path: Path, name: str) -> Listing:
    member = kind.list_member
    if not isinstance(raw, dict) or not isinstance(raw.get("items"), list):
        raise _fail(path, name, f"{member} must be an object with an items array")
    key_member = kind.key_member
    # The structure of each item first (up to the first fault), then one batch of hashes:
    # the faults are still reported for the first bad item, as one pass would.
    items: list[dict[str, Any]] = []
    fault: str | None = None
    for item in raw["items"]:
        if not isinstance(item, dict) or not isinstance(item.get("definition"), dict):
            fault = f"an entry of {member} is incomplete"
            break
        key = item.get(key_member)
        if not isinstance(key, str) or item["definition"].get(key_member) != key:
            fault = f"an entry of {member} does not match its definition's {key_member}"
            break
        items.append(item)
    try:
        encoded = canonical_many_parsed([item["definition"] for item in items])
    except JSONError as exc:  # pragma: no cover - parsed JSON always has a canonical form
        raise _fail(path, name, f"an entry of {member}: {exc.message}") from None
    definitions = []
    for position, (item, data) in enumerate(zip(items, encoded, strict=True), start=1):
        digest = hashlib.sha256(data).hexdigest()
        if digest != item.get("hash"):
            raise _fail(
                path,
                name,
                f"{member} item {position}: the definition does not match its hash",
            )
        definitions.append(Definition(item[key_member], digest, dict(item["definition"])))
    if fault is not None:
        raise _fail(path, name, fault)
    try:
        listing = Listing.of(kind, definitions)
    except ListingError as exc:
        raise _fail(path, name, exc.message) from None
    if raw.get("setHash") != listing.set_hash:
        raise _fail(path, name, f"{member} does not match its setHash")
    if not definitions and raw.get("setHash") != EMPTY_SET_HASH:  # pragma: no cover
        raise _fail(path, name, f"{member} does not match its setHash")
    return listing


NO_VERSION: Final = "(none)"
"""What earlier versions wrote for a server that gave no version; read as None (null)."""


def _identity_from_json(raw: JSONValue, *, path: Path, name: str) -> Identity:
    if not isinstance(raw, dict):
        raise _fail(path, name, "server identity must be a JSON object")
    fields: dict[str, str | None] = {}
    for key in ("name", "version", "protocolVersion"):
        value = raw.get(key)
        if key == "protocolVersion" and key not in raw:
            continue
        if key == "version" and key in raw and value in (None, NO_VERSION):
            fields[key] = None  # none reported (written "(none)" before null)
            continue
        if (
            not isinstance(value, str)
            or not value
            or value != value.strip()
            or any(ord(c) < 0x20 for c in value)
        ):
            raise _fail(path, name, f"server {key} must be a non-empty single-line string")
        fields[key] = value
    return Identity(
        name=str(fields["name"]),
        version=fields["version"],
        protocol_version=fields.get("protocolVersion"),
    )
