"""The private lookup index: ``api/v1/digests/<p>.json``, one bucket per digest prefix.

A client that wants to know whether the log recorded a surface (or a tools set) fetches
the bucket named by the first :data:`PREFIX_DIGITS` hex digits of its digest, never the
digest itself, so the host learns only which of 4,096 buckets was asked for (k-anonymity,
as Have I Been Pwned's range API). Every bucket is written, an empty one too, so a miss
is a file and not a 404.

A bucket is the RFC 8785 form of::

    {"checkpoint": {"origin": ..., "size": N, "root": "<base64>"},
     "prefix": "abc",
     "digests": [{"digest": "<64 hex>", "kind": "surface" | "tools", "entries": [i, ...]}]}

sorted by digest, then kind, each ``entries`` ascending and below ``size``. What counts:
every entry the site reads as a version (:mod:`toolpin.site.model`: an observation record
with a server id, a time and a surface digest), its ``digests.surface`` and, when it is
64 hex digits, its ``digests.tools`` -- opted-out servers' entries too (the log publishes
them; only their pages are withheld). A bucket is a hint: a client confirms a hit from
the entry and its inclusion proof, and a miss is only as complete as the index, which
:func:`audit_digests` checks against the log (``toolpin log verify``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import rfc8785

from toolpin.site.api import API

if TYPE_CHECKING:
    from toolpin.publog.checkpoint import Checkpoint
    from toolpin.site.history import History
    from toolpin.site.model import LogView
    from toolpin.site.output import SiteWriter

PREFIX_DIGITS: Final = 3
BUCKETS: Final = 16**PREFIX_DIGITS
KINDS: Final = ("surface", "tools")
DIGESTS: Final = f"{API}/digests"
MAX_BUCKET_BYTES: Final = 16 << 20
"""The largest bucket :func:`audit_digests` reads (about 150,000 digests)."""
_HEX64: Final = re.compile(r"[0-9a-f]{64}")

__all__ = [
    "BUCKETS",
    "DIGESTS",
    "KINDS",
    "PREFIX_DIGITS",
    "audit_digests",
    "bucket_bytes",
    "bucket_path",
    "buckets",
    "has_digests",
    "prefixes",
    "recorded",
    "write_digests",
]

Recorded = tuple[str, str, int]
"""``(digest, kind, entry index)``: one digest one entry recorded."""


def prefixes() -> list[str]:
    """Every bucket's prefix, ``000`` to ``fff``."""
    return [f"{n:0{PREFIX_DIGITS}x}" for n in range(BUCKETS)]


def bucket_path(prefix: str) -> str:
    return f"{DIGESTS}/{prefix}.json"


def recorded(index: int, digests: Mapping[str, object]) -> list[Recorded]:
    """The digests one entry puts in the index."""
    return [
        (value, kind, index)
        for kind in KINDS
        if isinstance(value := digests.get(kind), str) and _HEX64.fullmatch(value)
    ]


def buckets(found: Iterable[Recorded], size: int) -> dict[str, list[dict[str, Any]]]:
    """``{prefix: digests list}`` for every prefix, from the entries below ``size``."""
    grouped: dict[tuple[str, str], list[int]] = {}
    for digest, kind, index in found:
        if index < size:
            grouped.setdefault((digest, kind), []).append(index)
    out: dict[str, list[dict[str, Any]]] = {p: [] for p in prefixes()}
    for (digest, kind), entries in sorted(grouped.items()):
        out[digest[:PREFIX_DIGITS]].append(
            {"digest": digest, "kind": kind, "entries": sorted(entries)}
        )
    return out


def bucket_bytes(checkpoint: Mapping[str, Any], prefix: str, items: list[dict[str, Any]]) -> bytes:
    """A bucket's file: the RFC 8785 form of its document."""
    doc: dict[str, Any] = {"checkpoint": dict(checkpoint), "prefix": prefix, "digests": items}
    return rfc8785.dumps(doc)


def write_digests(
    writer: SiteWriter, view: LogView, published: History | None = None, kept_below: int = 0
) -> None:
    """Every bucket, each naming the first checkpoint the site published that covers its
    newest entry (an empty bucket: the first the site published), so a bucket no new
    entry falls in keeps its bytes and is not rewritten (``published``: the site's
    :class:`~toolpin.site.history.History`; ``None``: every bucket names the current
    checkpoint). A bucket whose entries are all below ``kept_below`` (the last build's
    checkpoint, when its history is the start of this one's) is the one that build
    wrote: kept when still as recorded, not encoded again."""
    cp = view.checkpoint
    current = {"origin": cp.origin, "size": cp.size, "root": cp.root}
    found = [
        item for _, version in view.versions() for item in recorded(version.index, version.digests)
    ]
    chosen = None
    if published is not None and published.items and kept_below:
        # Only the buckets a new entry falls in, or whose file is not as the last build
        # left it, are grouped and encoded (the rest are kept: the same test as below).
        touched = {digest[:PREFIX_DIGITS] for digest, _, index in found if index >= kept_below}
        chosen = {p for p in prefixes() if p in touched or not writer.keep(bucket_path(p))}
        found = [item for item in found if item[0][:PREFIX_DIGITS] in chosen]
    for prefix, items in buckets(found, cp.size).items():
        if chosen is not None and prefix not in chosen:
            continue
        checkpoint = current
        if published is not None and published.items:
            newest = max((item["entries"][-1] for item in items), default=-1)
            if newest < kept_below and writer.keep(bucket_path(prefix)):
                continue
            at = published.proven_at(newest)
            checkpoint = {"origin": cp.origin, "size": at.size, "root": at.root}
        writer.write(bucket_path(prefix), bucket_bytes(checkpoint, prefix, items))


def _log_digests(folder: Path, size: int) -> tuple[list[Recorded], list[bytes]]:
    """What the entries below ``size`` of the (already verified) log in ``folder`` put in
    the index, read by the site's own rule, and every entry's leaf hash."""
    from toolpin.errors import LogError
    from toolpin.publog.entries import decode_entry
    from toolpin.publog.merkle import leaf_hash
    from toolpin.publog.tiles import TileLog
    from toolpin.site.model import _version

    found: list[Recorded] = []
    leaves: list[bytes] = []
    for index, raw in enumerate(TileLog.open(folder).iter_entries(0, size)):
        leaf = leaf_hash(raw)
        leaves.append(leaf)
        try:
            value = decode_entry(raw, canonical=False)
        except LogError:
            continue
        version = _version(index, leaf, value)
        if version is not None:
            found.extend(recorded(index, version[1].digests))
    return found, leaves


def _read_bucket(path: Path, rel: str) -> tuple[Any, bytes]:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_BUCKET_BYTES + 1)
    except FileNotFoundError:
        raise _Problem(f"{rel} is missing") from None
    except OSError as exc:
        raise _Problem(f"{rel} cannot be read ({exc.strerror})") from None
    if len(data) > MAX_BUCKET_BYTES:
        raise _Problem(f"{rel} is larger than {MAX_BUCKET_BYTES} bytes")
    try:
        return json.loads(data), data
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than JSON needs
        raise _Problem(f"{rel} is not JSON") from None


class _Problem(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _checkpoint_of(doc: Any, rel: str, verified: Checkpoint) -> tuple[int, str]:
    cp = doc.get("checkpoint") if isinstance(doc, dict) else None
    if not (
        isinstance(cp, dict)
        and set(cp) == {"origin", "size", "root"}
        and isinstance(cp["size"], int)
        and not isinstance(cp["size"], bool)
        and isinstance(cp["root"], str)
    ):
        raise _Problem(f"{rel} does not name its checkpoint")
    if cp["origin"] != verified.origin:
        raise _Problem(f"{rel} names another log's checkpoint")
    if not 0 <= cp["size"] <= verified.size:
        raise _Problem(f"{rel} names checkpoint {cp['size']}, beyond the log's {verified.size}")
    return cp["size"], cp["root"]


def _difference(listed: Any, expected: list[dict[str, Any]]) -> str:
    """What is wrong with a bucket's ``digests`` (one phrase, toolpin's words only)."""
    want = {(d["digest"], d["kind"], i) for d in expected for i in d["entries"]}
    have: set[tuple[str, str, int]] = set()
    if isinstance(listed, list):
        for item in listed:
            if isinstance(item, dict) and isinstance(item.get("entries"), list):
                digest, kind = item.get("digest"), item.get("kind")
                if isinstance(digest, str) and _HEX64.fullmatch(digest) and kind in KINDS:
                    have.update((digest, str(kind), i) for i in item["entries"] if type(i) is int)
    missing, extra = (
        sorted(want - have, key=lambda t: t[2]),
        sorted(have - want, key=lambda t: t[2]),
    )
    if missing:
        digest, kind, index = missing[0]
        return f"omits the {kind} digest {digest} of entry {index}"
    if extra:
        digest, kind, index = extra[0]
        return f"lists a {kind} digest {digest} for entry {index}, which does not record it"
    return "is not in the index's form (order, fields or encoding)"


def audit_digests(folder: Path, verified: Checkpoint) -> tuple[str | None, int]:
    """Check the published buckets in ``folder`` (a site, or any copy with ``api/v1/
    digests/``) against its log, already verified at ``verified``: every bucket exists,
    names a checkpoint of this log (its root is the log's at that size) and lists exactly
    the digests of the entries below that size, in the index's own bytes. Returns the
    first problem (one line) or ``None``, and the number of buckets checked."""
    import base64

    from toolpin.publog.merkle import MemoryTree

    found, leaves = _log_digests(folder, verified.size)
    tree: MemoryTree | None = None
    expected: dict[int, dict[str, list[dict[str, Any]]]] = {}
    checked = 0
    try:
        for prefix in prefixes():
            rel = bucket_path(prefix)
            doc, data = _read_bucket(folder / rel, rel)
            size, root = _checkpoint_of(doc, rel, verified)
            if size == verified.size:
                real = verified.root
            else:
                if tree is None:
                    tree = MemoryTree(leaves)
                real = tree.root(size)
            if root != base64.b64encode(real).decode("ascii"):
                raise _Problem(f"{rel} names checkpoint {size} with a root this log never had")
            if size not in expected:
                expected[size] = buckets(found, size)
            items = expected[size][prefix]
            cp = {"origin": verified.origin, "size": size, "root": root}
            if data != bucket_bytes(cp, prefix, items):
                why = _difference(doc.get("digests"), items)
                raise _Problem(f"{rel} {why} (checkpoint {size})")
            checked += 1
    except _Problem as problem:
        return problem.reason, checked
    return None, checked


def has_digests(folder: Path) -> bool:
    """True when ``folder`` publishes a digest index (``api/v1/digests/``)."""
    return os.path.isdir(folder / DIGESTS)
