"""The private lookup index: ``api/v1/digests/<p>.json``, one bucket per digest prefix.

A client that wants to know whether the log recorded a surface (or a tools set) fetches
the bucket named by the first ``d`` hex digits of its digest, never the digest itself, so
the host learns only which of ``16**d`` buckets was asked for (k-anonymity, as Have I
Been Pwned's range API). ``d`` is chosen from the log by the rule of
:mod:`toolpin.core.digestindex` (the smallest length, 1 to 5, at which the log's records
average at most 1,024 per bucket) and published in ``api/v1/digests/index.json``, the RFC
8785 form of ``{"prefix_digits": d}``: its bytes change only when ``d`` does. Every bucket
of that length is written, an empty one too, so a miss is a file and not a 404; when a
growing log moves to a longer prefix, every bucket is written once at the new length and
the old-length ones are removed with the files the build no longer writes. A site without
``index.json`` is the old layout: ``d`` = 3.

A bucket is the RFC 8785 form of::

    {"checkpoint": {"origin": ..., "size": N, "root": "<base64>"},
     "prefix": "ab",
     "digests": [{"digest": "<64 hex>", "kind": "surface" | "tools", "entries": [i, ...]}]}

sorted by digest, then kind, each ``entries`` ascending and below ``size``. What counts:
every entry the site reads as a version (:mod:`toolpin.site.model`: an observation record
with a server id, a time and a surface digest), its ``digests.surface`` and, when it is
64 hex digits, its ``digests.tools`` -- opted-out servers' entries too (the log publishes
them; only their pages are withheld). A record is one distinct ``(digest, kind)`` pair.
A bucket is a hint: a client confirms a hit from the entry and its inclusion proof, and a
miss is only as complete as the index, which :func:`audit_digests` checks against the log
(``toolpin log verify``). So is ``d``: a lying ``index.json`` can only send a reader to
buckets that do not exist (a problem) or that the audit finds wrong, never make it
believe an entry the log does not hold.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import rfc8785

from toolpin.core import digestindex
from toolpin.core.digestindex import LEGACY_DIGITS
from toolpin.site.api import API

if TYPE_CHECKING:
    from toolpin.publog.checkpoint import Checkpoint
    from toolpin.site.history import History
    from toolpin.site.model import LogView
    from toolpin.site.output import SiteWriter

KINDS: Final = ("surface", "tools")
DIGESTS: Final = f"{API}/digests"
INDEX: Final = f"{DIGESTS}/index.json"
"""The published prefix length: ``{"prefix_digits": d}`` (RFC 8785)."""
MAX_BUCKET_BYTES: Final = 16 << 20
"""The largest bucket :func:`audit_digests` reads (about 150,000 digests)."""
MAX_INDEX_BYTES: Final = 1024
_HEX64: Final = re.compile(r"[0-9a-f]{64}")

__all__ = [
    "DIGESTS",
    "INDEX",
    "KINDS",
    "audit_digests",
    "bucket_bytes",
    "bucket_path",
    "buckets",
    "has_digests",
    "index_bytes",
    "prefix_digits",
    "prefixes",
    "recorded",
    "write_digests",
]

Recorded = tuple[str, str, int]
"""``(digest, kind, entry index)``: one digest one entry recorded."""


def prefixes(digits: int) -> list[str]:
    """Every bucket's prefix at ``digits`` hex digits (``0`` to ``f``, ``00`` to ``ff``, ...)."""
    return digestindex.prefixes(digits)


def bucket_path(prefix: str) -> str:
    return f"{DIGESTS}/{prefix}.json"


def index_bytes(digits: int) -> bytes:
    """``index.json``: the RFC 8785 form of ``{"prefix_digits": digits}``."""
    return rfc8785.dumps({"prefix_digits": digits})


def recorded(index: int, digests: Mapping[str, object]) -> list[Recorded]:
    """The digests one entry puts in the index."""
    return [
        (value, kind, index)
        for kind in KINDS
        if isinstance(value := digests.get(kind), str) and _HEX64.fullmatch(value)
    ]


def prefix_digits(found: Iterable[Recorded], size: int) -> int:
    """The prefix length the rule gives for the records of the entries below ``size``."""
    records = len({(digest, kind) for digest, kind, index in found if index < size})
    return digestindex.prefix_digits(records)


Row = tuple[str, str, list[int]]
"""``(digest, kind, entries)``: one record of a bucket, its entries ascending."""


def _rows(found: Iterable[Recorded], size: int, digits: int) -> dict[str, list[Row]]:
    """``{prefix: rows}`` for every prefix of ``digits`` hex digits, from the entries
    below ``size``, each bucket's rows sorted by digest, then kind."""
    grouped: dict[str, list[int]] = {}
    for digest, kind, index in found:
        if index < size:
            # 64 hex digits then the kind: one string that sorts as (digest, kind)
            grouped.setdefault(digest + kind, []).append(index)
    out: dict[str, list[Row]] = {p: [] for p in prefixes(digits)}
    for key in sorted(grouped):
        entries = grouped[key]
        out[key[:digits]].append((key[:64], key[64:], sorted(entries)))
    return out


def _bucket_rows(found: list[Recorded], size: int, digits: int) -> Iterator[tuple[str, list[Row]]]:
    """:func:`_rows`, one bucket at a time, every prefix in order: ``found`` is handed out
    to its buckets (and left empty), and each bucket's records are sorted by digest,
    kind, then entry (each bucket's rows in :func:`_rows`'s order) only when its turn
    comes, so only one bucket's rows are held at once (no grouping of the whole index;
    sorting each bucket alone is about twice as fast as sorting the whole list)."""
    parts: dict[str, list[Recorded]] = {prefix: [] for prefix in prefixes(digits)}
    for item in found:
        part = parts.get(item[0][:digits])
        if part is None:
            raise ValueError("internal error: a digest outside every bucket")
        part.append(item)
    found.clear()
    for prefix, part in parts.items():
        part.sort()
        rows: list[Row] = []
        for digest, kind, index in part:
            if index >= size:
                continue
            if rows and rows[-1][0] == digest and rows[-1][1] == kind:
                rows[-1][2].append(index)
            else:
                rows.append((digest, kind, [index]))
        part.clear()
        yield prefix, rows


def buckets(found: Iterable[Recorded], size: int, digits: int) -> dict[str, list[dict[str, Any]]]:
    """``{prefix: digests list}`` for every prefix of ``digits`` hex digits, from the
    entries below ``size``."""
    return {
        prefix: [{"digest": d, "kind": k, "entries": e} for d, k, e in rows]
        for prefix, rows in _rows(found, size, digits).items()
    }


def bucket_bytes(checkpoint: Mapping[str, Any], prefix: str, items: list[dict[str, Any]]) -> bytes:
    """A bucket's file: the RFC 8785 form of its document (the reference encoding the
    audit compares every published bucket with)."""
    doc: dict[str, Any] = {"checkpoint": dict(checkpoint), "prefix": prefix, "digests": items}
    return rfc8785.dumps(doc)


def _row_bytes(checkpoint: Mapping[str, Any], prefix: str, rows: list[Row]) -> bytes:
    """:func:`bucket_bytes` of ``rows``, without building the document: the rows' members
    are 64 hex digits, a kind of :data:`KINDS` and entry numbers, whose RFC 8785 form is
    their plain text, so only the checkpoint and the prefix go through the encoder (about
    7 times faster on a 200,000-record index; every build's audit and tests compare the
    result with :func:`bucket_bytes`)."""
    listed = ",".join(
        f'{{"digest":"{digest}","entries":[{",".join(map(str, entries))}],"kind":"{kind}"}}'
        for digest, kind, entries in rows
    )
    return b"".join(
        (
            b'{"checkpoint":',
            rfc8785.dumps(dict(checkpoint)),
            b',"digests":[',
            listed.encode("ascii"),
            b'],"prefix":',
            rfc8785.dumps(prefix),
            b"}",
        )
    )


def write_digests(
    writer: SiteWriter, view: LogView, published: History | None = None, kept_below: int = 0
) -> None:
    """``index.json`` and every bucket at the length the rule gives for this log, each
    bucket naming the first checkpoint the site published that covers its newest entry
    (an empty bucket: the first the site published), so a bucket no new entry falls in
    keeps its bytes and is not rewritten (``published``: the site's
    :class:`~toolpin.site.history.History`; ``None``: every bucket names the current
    checkpoint). A bucket whose entries are all below ``kept_below`` (the last build's
    checkpoint, when its history is the start of this one's) is the one that build
    wrote: kept when still as recorded, not encoded again. When the length changed since
    the last build, no file of the new length was recorded, so every one is written, and
    the old-length files, no longer written, are removed by the writer."""
    cp = view.checkpoint
    current = {"origin": cp.origin, "size": cp.size, "root": cp.root}
    found = [
        item for _, version in view.versions() for item in recorded(version.index, version.digests)
    ]
    digits = prefix_digits(found, cp.size)
    writer.write(INDEX, index_bytes(digits))
    chosen = None
    if published is not None and published.items and kept_below:
        # Only the buckets a new entry falls in, or whose file is not as the last build
        # left it, are grouped and encoded (the rest are kept: the same test as below).
        touched = {digest[:digits] for digest, _, index in found if index >= kept_below}
        chosen = {p for p in prefixes(digits) if p in touched or not writer.keep(bucket_path(p))}
        found = [item for item in found if item[0][:digits] in chosen]
    for prefix, rows in _bucket_rows(found, cp.size, digits):
        if chosen is not None and prefix not in chosen:
            continue
        checkpoint = current
        if published is not None and published.items:
            newest = max((entries[-1] for _, _, entries in rows), default=-1)
            if newest < kept_below and writer.keep(bucket_path(prefix)):
                continue
            at = published.proven_at(newest)
            checkpoint = {"origin": cp.origin, "size": at.size, "root": at.root}
        writer.write(bucket_path(prefix), _row_bytes(checkpoint, prefix, rows))


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


def _read_bucket(path: Path, rel: str, cap: int = MAX_BUCKET_BYTES) -> tuple[Any, bytes]:
    try:
        with path.open("rb") as handle:
            data = handle.read(cap + 1)
    except FileNotFoundError:
        raise _Problem(f"{rel} is missing") from None
    except OSError as exc:
        raise _Problem(f"{rel} cannot be read ({exc.strerror})") from None
    if len(data) > cap:
        raise _Problem(f"{rel} is larger than {cap} bytes")
    try:
        return json.loads(data), data
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than JSON needs
        raise _Problem(f"{rel} is not JSON") from None


def _published_digits(folder: Path) -> int | None:
    """The prefix length ``index.json`` publishes, checked to be in its own bytes;
    ``None`` when there is none (the old layout)."""
    if not os.path.lexists(folder / INDEX):
        return None
    doc, data = _read_bucket(folder / INDEX, INDEX, MAX_INDEX_BYTES)
    digits = doc.get("prefix_digits") if isinstance(doc, dict) else None
    if (
        type(digits) is not int
        or not digestindex.MIN_DIGITS <= digits <= digestindex.MAX_DIGITS
        or data != index_bytes(digits)
    ):
        raise _Problem(
            f'{INDEX} is not {{"prefix_digits": d}} with d from '
            f"{digestindex.MIN_DIGITS} to {digestindex.MAX_DIGITS} (RFC 8785)"
        )
    return digits


_BUCKET_NAME: Final = re.compile(r"([0-9a-f]{1,8})\.json")


def _left_over(folder: Path, digits: int) -> str | None:
    """The first file in the index's folder that is neither ``index.json`` nor a bucket
    of ``digits`` hex digits (a bucket of another length left by an earlier build, or
    anything else), in toolpin's words."""
    with os.scandir(folder / DIGESTS) as listing:
        names = sorted(entry.name for entry in listing)
    for name in names:
        if name == "index.json":
            continue
        match = _BUCKET_NAME.fullmatch(name)
        if match is None:
            return f"{DIGESTS}/ holds a file that is not a bucket of the index"
        if len(match.group(1)) != digits:
            return (
                f"{DIGESTS}/{name} is a bucket of {len(match.group(1))} prefix digits, "
                f"left beside the index's {digits}"
            )
    return None


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


def audit_digests(folder: Path, verified: Checkpoint) -> tuple[str | None, int, int]:
    """Check the published index in ``folder`` (a site, or any copy with ``api/v1/
    digests/``) against its log, already verified at ``verified``: ``index.json`` gives
    the length the rule gives for the log's records (a folder without it is the old
    layout, 3 digits); every bucket of that length exists, names a checkpoint of this log
    (its root is the log's at that size) and lists exactly the digests of the entries
    below that size, in the index's own bytes; and nothing else is in the folder (no
    bucket of another length). Returns the first problem (one line) or ``None``, the
    number of buckets checked and the prefix length."""
    import base64

    from toolpin.publog.merkle import MemoryTree

    found, leaves = _log_digests(folder, verified.size)
    tree: MemoryTree | None = None
    expected: dict[int, dict[str, list[dict[str, Any]]]] = {}
    checked = 0
    digits = LEGACY_DIGITS
    try:
        published = _published_digits(folder)
        if published is not None:
            digits = published
            rule = prefix_digits(found, verified.size)
            if published != rule:
                records = len({(digest, kind) for digest, kind, _ in found})
                raise _Problem(
                    f"{INDEX} gives {published} prefix digits; the rule gives {rule} for "
                    f"the log's {records} records"
                )
        for prefix in prefixes(digits):
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
                expected[size] = buckets(found, size, digits)
            items = expected[size][prefix]
            cp = {"origin": verified.origin, "size": size, "root": root}
            if data != bucket_bytes(cp, prefix, items):
                why = _difference(doc.get("digests"), items)
                raise _Problem(f"{rel} {why} (checkpoint {size})")
            checked += 1
        extra = _left_over(folder, digits)
        if extra is not None:
            raise _Problem(extra)
    except _Problem as problem:
        return problem.reason, checked, digits
    return None, checked, digits


def has_digests(folder: Path) -> bool:
    """True when ``folder`` publishes a digest index (``api/v1/digests/``)."""
    return os.path.isdir(folder / DIGESTS)
