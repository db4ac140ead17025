"""C2SP tiled transparency log (``c2sp.org/tlog-tiles``) on a local directory.

Layout of a log directory (every file but ``checkpoint`` is immutable once a checkpoint
covers it, so the directory can be served by any static host)::

    checkpoint                       signed note (tlog-checkpoint), replaced atomically
    tile/<L>/<N>[.p/<W>]             hash tiles: 256 (or W < 256) 32-byte hashes
    tile/entries/<N>[.p/<W>]         entry bundles: uint16 big-endian length + entry, x256
    blob/sha256/<hex>                content-addressed blobs (see blobs.py)
    .toolpin.lock                    cross-process append lock (not to be published)

``N`` is written in 3-digit groups, all but the last prefixed with ``x``
(``1234067`` -> ``x001/x234/067``). A level-0 tile holds leaf hashes; a level-L tile holds
the roots of 256 consecutive full tiles of level L-1 (the complete subtree hashes at tree
level ``8 * L``). A partial tile at level L for tree size ``s`` has width
``(s >> 8L) % 256``; partial tiles are never hashed into the level above.

:class:`TileLog` appends batches (:meth:`TileLog.append`) and reads entries and proofs back
from tiles. An append, under a cross-process lock, re-reads and verifies the current
checkpoint with the signer's own key, recomputes its root from the tiles it builds on,
writes entry bundles and tiles (full ones once; an existing full file must be
byte-identical, a stray partial one from an interrupted append is replaced), checks the new
tree is consistent with the old checkpoint, and writes the new signed checkpoint last. Each
file is written atomically, so a crash at any point leaves a log that verifies at its last
checkpoint.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from toolpin.errors import LogError
from toolpin.publog.blobs import BlobStore
from toolpin.publog.checkpoint import (
    Checkpoint,
    open_checkpoint,
    read_unverified,
    sign_checkpoint,
)
from toolpin.publog.entries import MAX_ENTRY_BYTES, blob_reference, decode_entry
from toolpin.publog.merkle import (
    EMPTY_ROOT,
    HASH_SIZE,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    perfect_root,
    tree_root,
    verify_consistency,
)
from toolpin.publog.note import Signer, Verifier
from toolpin.publog.tilepaths import (
    CHECKPOINT_FILE,
    MAX_BUNDLE_BYTES,
    MAX_TILE_BYTES,
    TILE_HEIGHT,
    TILE_WIDTH,
    decode_bundle,
    entries_path,
    format_index,
    node_in_tile,
    tile_path,
    tile_span_root,
)
from toolpin.publog.tilepaths import width_at as _width_at
from toolpin.util.fs import atomic_write, fsync_dir, locked

LOCK_FILE = ".toolpin.lock"
MAX_CHECKPOINT_BYTES = 1 << 20


def max_file_bytes(rel: str) -> int:
    """The largest size a well-formed log file at ``rel`` can have."""
    if rel == CHECKPOINT_FILE:
        return MAX_CHECKPOINT_BYTES
    if rel.startswith("tile/entries/"):
        return MAX_BUNDLE_BYTES
    return MAX_TILE_BYTES


def read_bounded(path: Path, limit: int) -> bytes:
    """Read ``path``, refusing (LogError) a file larger than ``limit`` bytes."""
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise LogError(f"{path.name} is larger than any valid log file of its kind")
    return data


__all__ = [
    "CHECKPOINT_FILE",
    "MAX_BUNDLE_BYTES",
    "MAX_TILE_BYTES",
    "TILE_HEIGHT",
    "TILE_WIDTH",
    "TileHashSource",
    "TileLog",
    "TileRef",
    "decode_bundle",
    "encode_bundle",
    "entries_path",
    "format_index",
    "tile_path",
    "tiles_for_size",
]


@dataclass(frozen=True)
class TileRef:
    """One tile of a tree: level, index within the level, width (256 when full)."""

    level: int
    index: int
    width: int

    @property
    def full(self) -> bool:
        return self.width == TILE_WIDTH

    @property
    def path(self) -> str:
        return tile_path(self.level, self.index, self.width)

    @property
    def entries_path(self) -> str:
        return entries_path(self.index, self.width)


def tiles_for_size(size: int) -> list[TileRef]:
    """Every hash tile a checkpoint of ``size`` needs (level 0 first, then upwards)."""
    refs: list[TileRef] = []
    level = 0
    while size >> (TILE_HEIGHT * level):
        count = size >> (TILE_HEIGHT * level)
        full, partial = divmod(count, TILE_WIDTH)
        refs.extend(TileRef(level, n, TILE_WIDTH) for n in range(full))
        if partial:
            refs.append(TileRef(level, full, partial))
        level += 1
    return refs


def encode_bundle(entries: Sequence[bytes]) -> bytes:
    """Entry bundle: each entry prefixed with its big-endian uint16 length."""
    parts = []
    for entry in entries:
        if len(entry) > MAX_ENTRY_BYTES:
            raise LogError(f"a log entry is at most {MAX_ENTRY_BYTES:,} bytes")
        parts.append(len(entry).to_bytes(2, "big"))
        parts.append(entry)
    return b"".join(parts)


def _split_hashes(data: bytes) -> list[bytes]:
    return [data[i : i + HASH_SIZE] for i in range(0, len(data), HASH_SIZE)]


class _Files:
    """Reads tiles and bundles of a log directory, with pending writes laid over them.

    A tile of width W may be served by the exact file, by the full tile, or by a wider
    partial tile (hashes never change once written, so any of them holds the prefix).
    """

    def __init__(self, root: Path, overlay: dict[str, bytes] | None = None) -> None:
        self.root = root
        self.overlay = overlay if overlay is not None else {}
        self._cache: dict[tuple[int, int, int], bytes] = {}

    def _candidates(self, exact: str, full: str, width: int) -> Iterator[str]:
        yield exact
        if width == TILE_WIDTH:
            return
        yield full
        partial_dir = self.root / (full + ".p")
        try:
            widths = sorted(int(n) for n in os.listdir(partial_dir) if n.isdigit())
        except OSError:
            widths = []
        for w in widths:
            if width < w < TILE_WIDTH:
                yield f"{full}.p/{w}"
        for rel in self.overlay:
            if rel.startswith(full + ".p/") and _width_of(rel) > width:
                yield rel

    def _read(self, rel: str) -> bytes | None:
        if rel in self.overlay:
            return self.overlay[rel]
        try:
            return read_bounded(self.root / rel, max_file_bytes(rel))
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise LogError(f"{rel} cannot be read ({exc.strerror})") from None

    def tile(self, level: int, index: int, width: int) -> bytes:
        """Exactly ``width`` hashes of tile ``(level, index)`` (``width * 32`` bytes)."""
        key = (level, index, width)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        exact = tile_path(level, index, width)
        for rel in self._candidates(exact, tile_path(level, index), width):
            data = self._read(rel)
            if data is None:
                continue
            if len(data) != HASH_SIZE * _width_of(rel):
                raise LogError(f"{rel} has the wrong length ({len(data)} bytes)")
            result = data[: HASH_SIZE * width]
            if len(self._cache) > 256:
                self._cache.clear()
            self._cache[key] = result
            return result
        raise LogError(f"{exact} is missing")

    def bundle(self, index: int, width: int) -> list[bytes]:
        """The first ``width`` entries of entry bundle ``index``."""
        exact = entries_path(index, width)
        for rel in self._candidates(exact, entries_path(index), width):
            data = self._read(rel)
            if data is None:
                continue
            try:
                entries = decode_bundle(data)
            except LogError:
                raise LogError(f"{rel} is truncated") from None
            if len(entries) != _width_of(rel):
                raise LogError(f"{rel} holds {len(entries)} entries, not {_width_of(rel)}")
            return entries[:width]
        raise LogError(f"{exact} is missing")


def _parse_index(groups: Sequence[str]) -> int:
    """Inverse of :func:`format_index` for path groups (``["x001", "234"]`` -> 1234)."""
    return int("".join(g.removeprefix("x") for g in groups))


def _width_of(rel: str) -> int:
    """The width a tile or bundle path names (256 for a full one)."""
    return int(rel.rsplit("/", 1)[1]) if ".p/" in rel else TILE_WIDTH


class TileHashSource:
    """A :class:`~toolpin.publog.merkle.HashSource` over the tiles of a tree of ``size``."""

    def __init__(self, files: _Files, size: int) -> None:
        self._files = files
        self._size = size

    def node(self, level: int, index: int) -> bytes:
        tile_level, tile_index, offset, count = node_in_tile(level, index)
        width = _width_at(self._size, tile_level, tile_index)
        if offset + count > width:
            raise LogError(f"subtree ({level}, {index}) is outside a tree of {self._size}")
        return tile_span_root(self._files.tile(tile_level, tile_index, width), offset, count)


def _ensure_dir(directory: Path) -> None:
    """Create ``directory`` and fsync each parent that gained a child."""
    missing = []
    current = directory
    while not current.exists():
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        path.mkdir(exist_ok=True)
        fsync_dir(path.parent)


class TileLog:
    """A tiled transparency log in a directory: append batches, read entries and proofs.

    ``open`` does not create anything; a directory without ``checkpoint`` is an empty log
    (size 0) until the first :meth:`append` signs one.
    """

    def __init__(self, path: Path, checkpoint: Checkpoint | None, note: str | None) -> None:
        self.path = path
        self._checkpoint = checkpoint
        self._note = note

    @classmethod
    def open(cls, path: str | Path, verifier: Verifier | None = None) -> TileLog:
        """Open the log at ``path``. With ``verifier``, the checkpoint must be signed by it;
        without, it is only parsed (proofs built from it are checked by their verifier)."""
        root = Path(path)
        if root.exists() and not root.is_dir():
            raise LogError(f"{root} is not a directory")
        checkpoint, note = _read_checkpoint(root, verifier)
        return cls(root, checkpoint, note)

    @property
    def checkpoint(self) -> Checkpoint | None:
        return self._checkpoint

    @property
    def checkpoint_note(self) -> str | None:
        """The signed checkpoint text, verbatim (for tlog-proof bundles)."""
        return self._note

    @property
    def size(self) -> int:
        return self._checkpoint.size if self._checkpoint else 0

    def refresh(self, verifier: Verifier | None = None) -> None:
        self._checkpoint, self._note = _read_checkpoint(self.path, verifier)

    def _source(self, size: int) -> TileHashSource:
        if not 0 <= size <= self.size:
            raise LogError(f"tree size {size} is beyond the checkpoint ({self.size})")
        return TileHashSource(_Files(self.path), size)

    def root(self, size: int | None = None) -> bytes:
        """The root hash at ``size`` (default: the checkpoint), recomputed from tiles."""
        n = self.size if size is None else size
        return tree_root(self._source(n), n)

    def read_entry(self, index: int) -> bytes:
        """Entry ``index`` as stored (not checked against the tree: proofs do that)."""
        if not 0 <= index < self.size:
            raise LogError(f"entry {index} is not in the log (size {self.size})")
        bundle, offset = divmod(index, TILE_WIDTH)
        width = _width_at(self.size, 0, bundle)
        return _Files(self.path).bundle(bundle, width)[offset]

    def iter_entries(self, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        """Entries ``start..end-1`` in order, a bundle at a time."""
        stop = self.size if end is None else end
        if not 0 <= start <= stop <= self.size:
            raise LogError(f"entry range {start}..{stop} is outside the log")
        files = _Files(self.path)
        index = start
        while index < stop:
            bundle, offset = divmod(index, TILE_WIDTH)
            entries = files.bundle(bundle, _width_at(self.size, 0, bundle))
            take = entries[offset : offset + (stop - index)]
            yield from take
            index += len(take)

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        n = self.size if size is None else size
        if not 0 <= index < n:
            raise LogError(f"entry {index} is not in a tree of size {n}")
        return inclusion_proof(self._source(n), index, n)

    def consistency_proof(self, old_size: int, new_size: int | None = None) -> list[bytes]:
        n = self.size if new_size is None else new_size
        if not 0 <= old_size <= n:
            raise LogError(f"no consistency proof from size {old_size} to {n}")
        return consistency_proof(self._source(n), old_size, n)

    # -- writing ---------------------------------------------------------------------------

    def append(
        self, entries: Sequence[bytes], signer: Signer, *, lock_timeout: float = 60.0
    ) -> Checkpoint:
        """Append ``entries`` (RFC 8785 JSON objects, at most 65,535 bytes each) and sign
        the new checkpoint with ``signer`` (whose key name is the log origin).

        An empty batch re-signs the current tree (and creates an empty log).
        """
        batch = [bytes(e) for e in entries]
        blobs = BlobStore(self.path)
        for i, entry in enumerate(batch):
            if len(entry) > MAX_ENTRY_BYTES:
                raise LogError(f"entry {i} of the batch is over {MAX_ENTRY_BYTES:,} bytes")
            ref = blob_reference(decode_entry(entry))
            if ref is not None:
                blobs.check(ref)  # present and intact before any checkpoint refers to it
        _ensure_dir(self.path)
        with locked(self.path / LOCK_FILE, timeout=lock_timeout):
            old_cp, _ = _read_checkpoint(self.path, signer.verifier, origin=signer.name)
            checkpoint, note = self._append_locked(old_cp, batch, signer)
        self._checkpoint, self._note = checkpoint, note
        return checkpoint

    def _append_locked(
        self, old_cp: Checkpoint | None, batch: list[bytes], signer: Signer
    ) -> tuple[Checkpoint, str]:
        old = old_cp.size if old_cp else 0
        old_root = old_cp.root if old_cp else EMPTY_ROOT
        new = old + len(batch)
        files = _Files(self.path)
        if tree_root(TileHashSource(files, old), old) != old_root:
            raise LogError(
                "the tiles do not match the signed checkpoint; refusing to append",
                advice="Run `toolpin log verify` and restore the log from a good copy.",
            )
        writes: dict[str, bytes] = {}

        # Entry bundles: the old partial bundle (checked against its tile) plus the batch.
        first_bundle, old_width = divmod(old, TILE_WIDTH)
        carried: list[bytes] = []
        if old_width:
            carried = files.bundle(first_bundle, old_width)
            tile0 = files.tile(0, first_bundle, old_width)
            if b"".join(leaf_hash(e) for e in carried) != tile0:
                raise LogError(
                    f"{entries_path(first_bundle, old_width)} does not match its tile",
                    advice="Run `toolpin log verify` and restore the log from a good copy.",
                )
        pending = carried + batch
        for n in range(first_bundle, -(-new // TILE_WIDTH)):
            chunk = pending[(n - first_bundle) * TILE_WIDTH : (n - first_bundle + 1) * TILE_WIDTH]
            writes[entries_path(n, len(chunk))] = encode_bundle(chunk)

        # Hash tiles, level by level: new hashes at level L+1 are the roots of the tiles
        # that became full at level L.
        new_hashes = [leaf_hash(e) for e in batch]
        level = 0
        while True:
            shift = TILE_HEIGHT * level
            count_old, count_new = old >> shift, new >> shift
            if count_new == count_old:
                break
            first_tile, width = divmod(count_old, TILE_WIDTH)
            prefix = _split_hashes(files.tile(level, first_tile, width)) if width else []
            hashes = prefix + new_hashes
            completed = []
            for n in range(first_tile, -(-count_new // TILE_WIDTH)):
                chunk = hashes[(n - first_tile) * TILE_WIDTH : (n - first_tile + 1) * TILE_WIDTH]
                writes[tile_path(level, n, len(chunk))] = b"".join(chunk)
                if len(chunk) == TILE_WIDTH:
                    completed.append(perfect_root(chunk))
            new_hashes = completed
            level += 1

        # The new tree, read back through the pending writes, must extend the old one.
        source = TileHashSource(_Files(self.path, overlay=writes), new)
        new_root = tree_root(source, new)
        proof = consistency_proof(source, old, new)
        if not verify_consistency(old, new, old_root, new_root, proof):
            raise LogError("internal error: the new tree does not extend the old checkpoint")
        checkpoint = Checkpoint(origin=signer.name, size=new, root=new_root)
        note = sign_checkpoint(checkpoint, signer)

        for rel in writes:
            self._remove_stray_partials(rel, old)
        for rel, data in writes.items():
            self._write(rel, data, full=".p/" not in rel)
        atomic_write(self.path / CHECKPOINT_FILE, note.encode("utf-8"))
        return checkpoint, note

    def _remove_stray_partials(self, rel: str, old_size: int) -> None:
        """Delete partial files of ``rel``'s tile wider than the checkpoint's width there.

        Such files were left by an interrupted append and no checkpoint covers them, so no
        client may rely on them; removing them keeps every remaining partial file one that
        a signed checkpoint needs (which is what the audit checks).
        """
        base = rel.split(".p/", 1)[0]
        parts = base.split("/")
        index = _parse_index(parts[2:])
        level = 0 if parts[1] == "entries" else int(parts[1])
        keep = _width_at(old_size, level, index)
        partial_dir = self.path / (base + ".p")
        try:
            names = os.listdir(partial_dir)
        except OSError:
            return
        removed = False
        for name in names:
            if name.isdigit() and int(name) > keep and f"{base}.p/{name}" != rel:
                (partial_dir / name).unlink(missing_ok=True)
                removed = True
        if removed:
            fsync_dir(partial_dir)

    def _write(self, rel: str, data: bytes, *, full: bool) -> None:
        target = self.path / rel
        try:
            existing: bytes | None = read_bounded(target, max(len(data), max_file_bytes(rel)))
        except FileNotFoundError:
            existing = None
        except OSError as exc:
            raise LogError(f"{rel} cannot be read ({exc.strerror})") from None
        if existing == data:
            return  # written by an interrupted append of the same entries
        if existing is not None and full:
            raise LogError(
                f"{rel} already exists with different content; full tiles are never rewritten",
                advice=(
                    "An interrupted append of other entries left it beyond the checkpoint. "
                    "Append the same entries again, or remove files beyond the checkpoint "
                    "if they were never published."
                ),
            )
        _ensure_dir(target.parent)
        atomic_write(target, data)


def _read_checkpoint(
    root: Path, verifier: Verifier | None, *, origin: str | None = None
) -> tuple[Checkpoint | None, str | None]:
    try:
        raw = read_bounded(root / CHECKPOINT_FILE, MAX_CHECKPOINT_BYTES)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        raise LogError(f"{root / CHECKPOINT_FILE} cannot be read ({exc.strerror})") from None
    if verifier is None:
        checkpoint = read_unverified(raw)
    else:
        checkpoint = open_checkpoint(raw, verifier, origin=origin)
    return checkpoint, raw.decode("utf-8")
