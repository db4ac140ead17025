"""What a build verified, kept for the next one and bound to the checkpoint it verified.

A full build audits the whole log (:func:`toolpin.site.model.read_log`:
:func:`toolpin.publog.verify.verify_log`, every entry decoded, every blob hashed) and
reads every entry into server histories. Most of a daily build's time was that, for
entries the last build had already verified. So a build with a work cache keeps its
reading of the log in ``<cache>/verified/reading.json``: the signed checkpoint it verified, every
leaf hash of the tree at that checkpoint, and what it read of each entry (the version
fields the pages use, the reports' reading), as lines: a header, then the versions and
the reports' reading :data:`CHUNK` to a line, each parsed on its own when read back (so
the load never holds one parse of the whole file). The next build uses it only when all
of this holds, else it audits the whole log as before:

1. the kept note is signed by the log's key, and the kept leaf hashes, recomputed into a
   tree, give the kept note's root (the reading is bound to that checkpoint);
2. the log's current ``checkpoint`` is signed by the same key, for the same origin, and
   is no smaller than the kept one;
3. the new entries only (from the kept size to the current one, read from their entry
   bundles) are audited as the full audit does: each bundle decodes exactly and holds its
   width, each entry is a strict JSON object whose blob reference, if any, is well formed
   and whose blob is present and matches its digest; the entries of the first bundle that
   are below the kept size must have the kept leaf hashes;
4. the tree of the kept leaves and the new ones gives the current checkpoint's root: the
   current tree extends the kept one (the consistency a consistency proof shows, checked
   on every leaf), and every hash tile that covers a new entry (and each older partial
   tile and bundle the log keeps beside it) equals the hashes recomputed from the leaves.

What is not done again: decoding the entries below the kept size and hashing their
blobs. Those files are immutable in the log's layout; a build copies none of them into a
site unchecked (a new site's blobs are read back and hashed as they are linked, a tile or
bundle it copies is compared with the recomputed tree: :func:`toolpin.site.build.
_copy_log`). ``toolpin log verify`` still audits everything. The file is the build's own
work, in its private cache folder, like the explanations of :mod:`toolpin.site.cache`;
one that cannot be read, or was written by other code, is ignored.
"""

from __future__ import annotations

import binascii
import contextlib
import io
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import orjson

from toolpin.errors import LogError
from toolpin.publog.note import Verifier
from toolpin.site.model import (
    SERVER_ID,
    Entries,
    LogView,
    ServerHistory,
    Version,
    read_log,
    view_of,
)

if TYPE_CHECKING:
    from toolpin.crawl.report import ReportObservation
    from toolpin.publog.checkpoint import Checkpoint

FORMAT: Final = 2
FILE: Final = "verified/reading.json"
MAX_BYTES: Final = 1 << 31
"""The largest kept reading read back (a larger one is ignored)."""

__all__ = ["FILE", "read_verified"]


class _Stale(Exception):
    """The kept reading cannot be used for this log (the whole log is audited)."""


def read_verified(
    log_dir: Path,
    vkey: Verifier,
    *,
    state: Path | None,
    kept: Path | None,
    code: str,
    later: list[Callable[[], None]] | None = None,
) -> LogView:
    """:func:`toolpin.site.model.read_log`, from the reading kept in ``kept`` when it is
    bound to a checkpoint this log extends (see the module doc); the reading of this build
    is kept there for the next one (by the step appended to ``later``, when given: the
    caller runs it while other work goes on). ``code``: toolpin's code digest (other
    code: the kept reading is ignored)."""
    from toolpin.core.acyclic import collector_paused

    with collector_paused():  # what is read holds no cycle (:mod:`toolpin.core.acyclic`)
        reading = None if kept is None else _load(kept, vkey, code)
    view: LogView | None = None
    if reading is not None:
        try:
            view = _since(log_dir, vkey, reading, state)
        except (_Stale, LogError, OSError):
            view = None  # the full audit decides, and says why the log is refused
    if view is None:
        view = read_log(log_dir, vkey, state=state)
    if kept is not None and (reading is None or reading.checkpoint.size != view.checkpoint.size):
        path, done = kept, view
        if later is None:
            _save(path, code, done, reading)
        else:
            later.append(lambda: _save(path, code, done, reading))
    return view


@dataclass(frozen=True)
class _Reading:
    """The kept reading as loaded: the checkpoint it was verified at, its note, its entries."""

    checkpoint: Checkpoint
    note: str
    entries: Entries
    _: KW_ONLY
    base: tuple[str, int] = ("", 0)
    """The base file's note digest and size (what the tail's records extend)."""
    appended: int | None = None
    """How many tail records were read, all of them whole and in order (``None``: the
    tail was not, so the next reading is saved whole)."""


def tail_path(path: Path) -> Path:
    """The file of records appended to the kept reading ``path`` (see :func:`_save`)."""
    return path.with_name(path.name + ".tail")


def _note_digest(note: str) -> str:
    import hashlib

    return hashlib.sha256(note.encode("utf-8")).hexdigest()


def _versions(
    items: Any, leaves: list[bytes], last: int, size: int, servers: dict[str, ServerHistory]
) -> int:
    """Add the kept versions ``items`` (ascending, above ``last``, below ``size``) to
    ``servers``; the last index added."""
    for item in items:
        index, sid = item[0], item[1]
        if not (
            isinstance(index, int) and last < index < size and isinstance(sid, str)
        ) or not SERVER_ID.fullmatch(sid):
            raise ValueError("not a kept version")
        last = index
        version = Version(index, leaves[index].hex(), *item[2:])
        servers.setdefault(sid, ServerHistory(sid)).versions.append(version)
    return last


def _load(path: Path, vkey: Verifier, code: str) -> _Reading | None:
    """The kept reading (the base file and the records appended to it that extend it in
    order), when it is usable and bound to its signed checkpoint: the note of the last
    record read, whose root the tree of every kept leaf hash must give."""
    from toolpin.publog.checkpoint import open_checkpoint
    from toolpin.publog.merkle import tree_levels

    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        lines = _lines(path.read_bytes())
        doc = orjson.loads(next(lines))
    except (OSError, ValueError, StopIteration):
        return None
    if not (
        isinstance(doc, dict)
        and doc.get("v") == FORMAT
        and doc.get("code") == code
        and doc.get("vkey") == vkey.text
    ):
        return None
    try:
        note = doc["note"]
        checkpoint = open_checkpoint(note, vkey)
        raw = bytes.fromhex(doc["leaves"])
        size = checkpoint.size
        if len(raw) != 32 * size or size == 0:
            return None
        leaves = [raw[i : i + 32] for i in range(0, len(raw), 32)]
        del raw
        servers: dict[str, ServerHistory] = {}
        last = -1
        for _ in range(_count(doc["versions"])):
            last = _versions(orjson.loads(next(lines)), leaves, last, size, servers)
        observations: list[ReportObservation | None] | None = None
        if doc["observations"] is not None:
            observations = []
            at = {v.index: v for h in servers.values() for v in h.versions}
            for _ in range(_count(doc["observations"])):
                chunk = orjson.loads(next(lines))
                start = len(observations)
                width = len(chunk) if isinstance(chunk, list) else 0
                seen = _observations(chunk, leaves[start : start + width], at, start)
                if not seen:
                    return None  # (an empty chunk is not written)
                observations.extend(seen)
            if len(observations) != size:
                return None
        if next(lines, None) is not None:
            return None  # more than the header says: not this format's file
        unreadable = doc["unreadable"]
        if not isinstance(unreadable, int) or isinstance(note, bytes):
            return None
    except (LogError, KeyError, IndexError, TypeError, ValueError, StopIteration, binascii.Error):
        return None
    base = (_note_digest(note), size)
    count, whole = 0, True
    for record in _tail(path, base[0]):
        if record is None:
            whole = False  # a torn or foreign record: the reading up to it is used
            break
        try:
            start, end = record["from"], record["size"]
            if start != len(leaves) or not isinstance(end, int) or end <= start:
                raise ValueError("not the next record")
            more = bytes.fromhex(record["leaves"])
            if len(more) != 32 * (end - start) or not isinstance(record["note"], str):
                raise ValueError("not the record's leaves")
            grown = leaves + [more[i : i + 32] for i in range(0, len(more), 32)]
            added: dict[str, ServerHistory] = {}
            after = _versions(record["versions"], grown, last, end, added)
            seen = _observations(record["observations"], grown[start:])
            if (seen is None) != (observations is None) or not isinstance(
                record["unreadable"], int
            ):
                raise ValueError("not the base's kind of reading")
        except (KeyError, IndexError, TypeError, ValueError, binascii.Error):
            whole = False
            break
        leaves, last, note, unreadable = grown, after, record["note"], record["unreadable"]
        for sid, history in added.items():
            servers.setdefault(sid, ServerHistory(sid)).versions.extend(history.versions)
        if observations is not None and seen is not None:
            observations.extend(seen)
        count += 1
    try:
        checkpoint = open_checkpoint(note, vkey)
    except LogError:
        return None
    if checkpoint.size != len(leaves) or tree_levels(leaves)[-1][0] != checkpoint.root:
        return None  # not the tree of the checkpoint it names
    entries = Entries(checkpoint, note, servers, unreadable, leaves, observations)
    return _Reading(checkpoint, note, entries, base=base, appended=count if whole else None)


CHUNK: Final = 2000
"""Versions (or observations) per line of the kept reading: each line is parsed on its
own, so reading it back never holds more than one line's parse beside what it builds."""


def _count(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError("not a count of lines")
    return value


def _lines(data: bytes) -> Iterator[bytes]:
    """The lines of ``data``, one at a time (each with its newline, which JSON reads as
    white space)."""
    return iter(io.BytesIO(data))


def _chunks(items: Iterable[Any]) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _tail(path: Path, base: str) -> list[dict[str, Any] | None]:
    """The records appended to the reading ``path`` whose base is ``base``, in order; a
    record that cannot be read (torn, foreign) ends the list as ``None``."""
    try:
        data = tail_path(path).read_bytes()
    except OSError:
        return []
    out: list[dict[str, Any] | None] = []
    for line in data.split(b"\n"):
        if not line:
            continue
        try:
            record = orjson.loads(line)
        except ValueError:
            record = None
        if not (isinstance(record, dict) and record.get("base") == base):
            out.append(None)
            break
        out.append(record)
    if data and not data.endswith(b"\n") and out and out[-1] is not None:
        out.append(None)  # the last record is torn even though it parses
    return out


def _observations(
    items: Any, leaves: list[bytes], at: Mapping[int, Version] | None = None, start: int = 0
) -> list[ReportObservation | None] | None:
    """The reports' reading of the entries from ``start`` (one item per leaf). ``at``: the
    versions read, by index: a value equal to its entry's version's is that version's own
    object (one copy of each text in memory, not two)."""
    if items is None:
        return None
    if not isinstance(items, list) or len(items) != len(leaves):
        raise ValueError("not the reports' reading of every entry")
    out: list[ReportObservation | None] = []
    for index, (item, leaf) in enumerate(zip(items, leaves, strict=True), start):
        if item is None:
            out.append(None)
            continue
        sid, name, surface, observed, look, counts, blob = item
        v = None if at is None else at.get(index)
        if v is not None:
            name = v.name if name == v.name else name
            surface = v.surface if surface == v.surface else surface
            observed = v.observed_at if observed == v.observed_at else observed
            look = v.last_good_look if look == v.last_good_look else look
            blob = v.blob if blob == v.blob else blob
            if isinstance(counts, dict) and list(counts.items()) == list(v.counts.items()):
                counts = v.counts
        out.append((sid, name, surface, observed, look, counts, leaf, blob))
    return out


def _item(history: ServerHistory, v: Version) -> list[Any]:
    """One version as the reading keeps it."""
    return [
        v.index,
        history.id,
        v.observed_at,
        v.last_good_look,
        v.surface,
        dict(v.counts),
        dict(v.digests),
        v.blob,
        v.previous,
        v.name,
        v.source,
        v.transport,
        v.url,
        None if v.package is None else dict(v.package),
        None if v.server_info is None else dict(v.server_info),
        v.era,
        v.protocol_version,
    ]


MAX_APPENDED: Final = 64
"""Records appended to a kept reading before it is saved whole again."""


def _save(path: Path, code: str, view: LogView, reading: _Reading | None = None) -> None:
    """Keep this build's reading. When it extends the kept one (read whole, with its tail
    of records), only the new entries are appended to the tail, as one record (a torn
    record is ignored by the next build, which then saves the reading whole); else, or
    once the tail holds :data:`MAX_APPENDED` records or more entries than the base, the
    reading is saved whole (atomically; a reading is never half written) and the tail
    removed."""
    from toolpin.util.fs import atomic_write, ensure_private_dir

    old = 0 if reading is None else reading.checkpoint.size
    base, based = ("", 0) if reading is None else reading.base
    if (
        reading is not None
        and reading.appended is not None
        and reading.appended < MAX_APPENDED
        and view.checkpoint.size - based <= based
        and old < view.checkpoint.size
        and view.leaf_hashes[:old] == reading.entries.leaves
        and (view.observations is None) == (reading.entries.observations is None)
    ):
        _append(path, base, view, old)
        return
    order = sorted((v.index, h, v) for h in view.servers.values() for v in h.versions)
    ensure_private_dir(path.parent)
    try:  # written as it is encoded: never the whole reading in memory as JSON
        atomic_write(path, _whole(code, view, order), sync=False)
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate in a name
        return  # nothing kept: the next build audits the whole log
    with contextlib.suppress(FileNotFoundError):
        tail_path(path).unlink()  # (records of another base are ignored anyway)


def _whole(
    code: str, view: LogView, order: list[tuple[int, ServerHistory, Version]]
) -> Iterator[bytes]:
    """The kept reading's lines: a header (what it is bound to, and how many lines of
    versions and of observations follow), then the versions in log order and the reports'
    reading of every entry, :data:`CHUNK` to a line."""
    observations = view.observations
    header = {
        "v": FORMAT,
        "code": code,
        "vkey": view.checkpoint.vkey,
        "note": view.checkpoint.note,
        "leaves": b"".join(view.leaf_hashes).hex(),
        "unreadable": view.unreadable,
        "versions": -(-len(order) // CHUNK),
        "observations": None if observations is None else -(-len(observations) // CHUNK),
    }
    yield orjson.dumps(header) + b"\n"
    for chunk in _chunks(order):
        yield orjson.dumps([_item(h, v) for _, h, v in chunk]) + b"\n"
    if observations is not None:
        for part in _chunks(observations):
            yield orjson.dumps([None if o is None else [*o[:6], o[7]] for o in part]) + b"\n"


def _append(path: Path, base: str, view: LogView, old: int) -> None:
    """Append the entries from ``old`` to the view's size to the kept reading's tail."""
    import os

    pairs = sorted(
        (v.index, _item(h, v)) for h in view.servers.values() for v in h.versions if v.index >= old
    )
    observations = (
        None
        if view.observations is None
        else [None if o is None else [*o[:6], o[7]] for o in view.observations[old:]]
    )
    record = {
        "base": base,
        "from": old,
        "size": view.checkpoint.size,
        "note": view.checkpoint.note,
        "leaves": b"".join(view.leaf_hashes[old:]).hex(),
        "unreadable": view.unreadable,
        "versions": [item for _, item in pairs],
        "observations": observations,
    }
    try:
        data = orjson.dumps(record) + b"\n"
    except TypeError:  # a lone surrogate in a name: nothing kept (the next build audits
        return  # from the kept reading's size)
    fd = os.open(tail_path(path), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        view_ = memoryview(data)
        while view_:
            view_ = view_[os.write(fd, view_) :]
    finally:
        os.close(fd)


def _since(log_dir: Path, vkey: Verifier, reading: _Reading, state: Path | None) -> LogView:
    """The view of the log from the kept reading and an audit of the new entries only
    (raises :class:`_Stale` when the kept reading cannot be used)."""
    from toolpin.crawl.report import observation_of
    from toolpin.publog.blobs import BlobStore
    from toolpin.publog.checkpoint import open_checkpoint
    from toolpin.publog.entries import blob_reference, decode_entry
    from toolpin.publog.merkle import leaf_hash, tree_levels
    from toolpin.publog.tiles import (
        CHECKPOINT_FILE,
        TILE_HEIGHT,
        TILE_WIDTH,
        decode_bundle,
        entries_path,
        max_file_bytes,
        read_bounded,
        tile_path,
    )
    from toolpin.publog.verify import _older_partials
    from toolpin.site.model import add_version

    def read(rel: str) -> bytes:
        return read_bounded(log_dir / rel, max_file_bytes(rel))

    kept = reading.checkpoint
    note = read(CHECKPOINT_FILE).decode("utf-8")
    checkpoint = open_checkpoint(note, vkey)
    if checkpoint.origin != kept.origin or checkpoint.size < kept.size:
        raise _Stale("another log, or behind the kept checkpoint")
    old, size = kept.size, checkpoint.size
    entries = reading.entries
    if size == old:
        if checkpoint.root != kept.root:
            raise _Stale("the same size with another root")
        same = _with_note(entries, checkpoint, note)
        return view_of(same, checkpoint, log_dir, vkey, state=state)
    leaves = entries.leaves[:old]
    servers = {sid: ServerHistory(sid, list(h.versions)) for sid, h in entries.servers.items()}
    observations = None if entries.observations is None else list(entries.observations)
    unreadable = entries.unreadable
    blobs = BlobStore(log_dir)
    checked: set[str] = set()
    full, last_width = divmod(size, TILE_WIDTH)
    for n in range(old // TILE_WIDTH, full + (1 if last_width else 0)):
        width = TILE_WIDTH if n < full else last_width
        bundle = decode_bundle(read(entries_path(n, width)))
        if len(bundle) != width:
            raise _Stale("a bundle of another width")
        for older, w in _older_partials(log_dir, entries_path(n), width):
            if decode_bundle(read(older)) != bundle[:w]:
                raise _Stale("an older partial bundle that is not the log's")
        for offset, raw in enumerate(bundle):
            index = n * TILE_WIDTH + offset
            leaf = leaf_hash(raw)
            if index < old:
                if leaf != leaves[index]:
                    raise _Stale("an entry below the kept size changed")
                continue
            value = decode_entry(raw, canonical=False)
            ref = blob_reference(value)
            if ref is not None and ref not in checked:
                blobs.check(ref)
                checked.add(ref)
            leaves.append(leaf)
            if observations is not None:
                observations.append(observation_of(value, leaf))
            if not add_version(servers, index, leaf, value):
                unreadable += 1
    if len(leaves) != size:
        raise _Stale("not every new entry was read")
    levels = tree_levels(leaves)
    if levels[-1][0] != checkpoint.root:
        raise _Stale("the kept tree and the new entries do not give the checkpoint's root")
    level = 0
    while size >> (TILE_HEIGHT * level):
        count = size >> (TILE_HEIGHT * level)
        hashes = levels[TILE_HEIGHT * level]
        for n in range((old >> (TILE_HEIGHT * level)) // TILE_WIDTH, -(-count // TILE_WIDTH)):
            chunk = b"".join(hashes[n * TILE_WIDTH : min(count, (n + 1) * TILE_WIDTH)])
            if read(tile_path(level, n, len(chunk) // 32)) != chunk:
                raise _Stale("a hash tile that is not the tree's")
            for older, w in _older_partials(log_dir, tile_path(level, n), len(chunk) // 32):
                if read(older) != chunk[: 32 * w]:
                    raise _Stale("an older partial tile that is not the tree's")
        level += 1
    grown = Entries(checkpoint, note, servers, unreadable, leaves, observations)
    return view_of(grown, checkpoint, log_dir, vkey, state=state)


def _with_note(entries: Entries, checkpoint: Checkpoint, note: str) -> Entries:
    servers = {sid: ServerHistory(sid, list(h.versions)) for sid, h in entries.servers.items()}
    return Entries(
        checkpoint, note, servers, entries.unreadable, entries.leaves, entries.observations
    )
