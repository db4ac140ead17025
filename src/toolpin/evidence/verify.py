"""Verifying what a published log serves, with publog's Merkle code over fetched tiles.

* :func:`fetch_checkpoint`: the ``checkpoint`` file, opened with the pinned key only;
* :func:`check_against_kept`: the kept checkpoint and the new one must agree — same size
  means same root, a smaller size is a rollback, a larger one needs the RFC 9162
  consistency proof from the kept tree, computed from the new tree's tiles. When the proof
  fails, the tiles decide who lies: tiles that do not hash to the new signed root are
  ``tampered`` (a bad copy, nothing proven against the log); tiles that do, but whose
  prefix is not the kept root, prove a ``fork``;
* :class:`RemoteTree`: entry ``i`` from its entry bundle, accepted only when its RFC 9162
  inclusion proof (from the tiles) leads to the verified root. Entry bundles are
  immutable (their path names their width), so a proven one is kept in
  ``TOOLPIN_HOME/cache/logs/<origin key>/`` and read from there next time: still only an
  input to the same proof, and fetched again when it fails it. Full hash tiles are kept
  there the same way once a proof made with them verifies (a full tile never changes), so
  a warm lookup fetches only the checkpoint, the bucket and what is new; a proof that
  fails while it used a kept tile is made again from the log's own tiles, which decide.

Nothing here trusts a tile, a bundle or a bucket: they are only ever inputs to a proof
checked against a signed root.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from toolpin.errors import LogError
from toolpin.evidence.errors import LogProblem
from toolpin.evidence.fetch import Fetcher
from toolpin.publog.checkpoint import Checkpoint, open_checkpoint
from toolpin.publog.merkle import (
    HASH_SIZE,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    tree_root,
    verify_consistency,
    verify_inclusion,
)
from toolpin.publog.note import Verifier
from toolpin.publog.tilepaths import (
    CHECKPOINT_FILE,
    MAX_BUNDLE_BYTES,
    MAX_TILE_BYTES,
    TILE_WIDTH,
    decode_bundle,
    entries_path,
    node_in_tile,
    tile_path,
    tile_span_root,
)
from toolpin.publog.tilepaths import width_at as _width_at

MAX_CHECKPOINT_NOTE: Final = 16 << 10
"""A checkpoint note is a few hundred bytes; this cap leaves room for many signatures."""


def fetch_checkpoint(fetcher: Fetcher, verifier: Verifier) -> tuple[Checkpoint, str]:
    """The log's current checkpoint, signed by ``verifier`` (else ``bad-signature``)."""
    return open_fetched(fetch_raw_checkpoint(fetcher), verifier)


def fetch_raw_checkpoint(fetcher: Fetcher) -> bytes:
    """The bytes of the log's ``checkpoint`` file (not yet checked)."""
    return fetcher.get(CHECKPOINT_FILE, MAX_CHECKPOINT_NOTE, what="the checkpoint")


def open_fetched(raw: bytes, verifier: Verifier) -> tuple[Checkpoint, str]:
    """A fetched checkpoint opened with ``verifier`` (else ``bad-signature``)."""
    try:
        note = raw.decode("utf-8")
        return open_checkpoint(note, verifier), note
    except (UnicodeDecodeError, LogError):
        raise LogProblem(
            "bad-signature",
            f"the log's checkpoint is not signed by the pinned key of {verifier.name}",
            advice="Check that --vkey is the key this log publishes.",
        ) from None


def fetch_bundle(fetcher: Fetcher, rel: str, width: int) -> tuple[bytes, list[bytes]]:
    """Fetch the entry bundle at ``rel`` and decode it: its bytes and its ``width``
    entries (``tampered`` when it is not a bundle or holds another number of entries).
    Proving the entries against a checkpoint is the caller's part."""
    data = fetcher.get(rel, MAX_BUNDLE_BYTES, what=rel)
    try:
        entries = decode_bundle(data)
    except LogError:
        raise LogProblem("tampered", f"{rel} is not an entry bundle") from None
    if len(entries) != width:
        raise LogProblem("tampered", f"{rel} does not hold {width} entries")
    return data, entries


class RemoteTree:
    """The tree of a verified checkpoint, read from the published tiles on demand.

    A :class:`~toolpin.publog.merkle.HashSource`: ``node`` hashes come from fetched tiles
    (cached), unverified on their own; every answer built from them is checked against
    ``checkpoint.root`` before it is believed.
    """

    def __init__(
        self, fetcher: Fetcher, checkpoint: Checkpoint, *, cache: Path | None = None
    ) -> None:
        self.fetcher = fetcher
        self.checkpoint = checkpoint
        self.size = checkpoint.size
        self.cache = cache
        """A folder for entry bundles by their path (immutable: a bundle's path names its
        width), or ``None``. A cached bundle is only an input to the inclusion proof, as a
        fetched one is; one that fails it is fetched again and replaced."""
        self._tiles: dict[tuple[int, int], bytes] = {}
        self._bundles: dict[int, list[bytes]] = {}
        self._raw: dict[int, bytes] = {}
        self._from_cache: set[int] = set()
        self._disk_tiles: set[tuple[int, int]] = set()
        """Full tiles read from the cache folder (only inputs to proofs, as fetched ones)."""
        self._new_full: dict[tuple[int, int], bytes] = {}
        """Full tiles fetched and not kept yet: kept once a proof made with them verifies."""
        self._no_disk = False

    def _tile(self, level: int, index: int) -> bytes:
        key = (level, index)
        cached = self._tiles.get(key)
        if cached is not None:
            return cached
        width = _width_at(self.size, level, index)
        if width == 0:
            raise LogError("a subtree outside the tree was asked for")
        rel = tile_path(level, index, width)
        full = width == TILE_WIDTH
        if full and self.cache is not None and not self._no_disk:
            kept = _read_kept(self.cache / rel, MAX_TILE_BYTES)
            if kept is not None:
                self._tiles[key] = kept
                self._disk_tiles.add(key)
                return kept
        data = self.fetcher.get(rel, MAX_TILE_BYTES, what=rel)
        if len(data) != width * HASH_SIZE:
            raise LogProblem("tampered", f"{rel} has the wrong length")
        self._tiles[key] = data
        if full:
            self._new_full[key] = data
        return data

    def _keep_tiles(self) -> None:
        """A proof made from the tiles read so far verified against the signed root: keep
        the full tiles fetched for it (immutable: a full tile never changes) in the cache
        folder, so the next lookup need not fetch them (best effort)."""
        new, self._new_full = self._new_full, {}
        if self.cache is None or not new:
            return
        from toolpin.util.fs import atomic_write

        for (level, index), data in sorted(new.items()):
            target = self.cache / tile_path(level, index)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(target, data, mode=0o600, sync=False)
            except OSError:
                return

    def _without_kept_tiles(self) -> bool:
        """A proof failed: forget the tiles read from the cache folder and read every tile
        from the log from now on. ``True`` when there were any (then the proof is made
        again from the log's own tiles, which decide)."""
        if not self._disk_tiles:
            return False
        for key in self._disk_tiles:
            self._tiles.pop(key, None)
        self._disk_tiles.clear()
        self._no_disk = True
        return True

    def node(self, level: int, index: int) -> bytes:
        tile_level, tile_index, offset, count = node_in_tile(level, index)
        data = self._tile(tile_level, tile_index)
        if (offset + count) * HASH_SIZE > len(data):
            raise LogError("a subtree outside the tree was asked for")
        return tile_span_root(data, offset, count)

    def root_matches(self) -> bool:
        """Whether the tiles hash to the signed root (false: a tampered or partial copy)."""
        while True:
            try:
                if tree_root(self, self.size) == self.checkpoint.root:
                    self._keep_tiles()
                    return True
            except (LogError, ValueError):
                pass
            if not self._without_kept_tiles():
                return False

    def entry(self, index: int) -> bytes:
        """Entry ``index``, proven included in the checkpoint (else ``tampered``)."""
        if not 0 <= index < self.size:
            raise LogProblem("tampered", f"entry {index} is beyond the log's checkpoint")
        bundle, offset = divmod(index, TILE_WIDTH)
        entries = self._bundles.get(bundle)
        if entries is None:
            entries = self._cached_bundle(bundle)
        cached = bundle in self._from_cache
        if entries is None:
            entries = self._fetched_bundle(bundle)
        entry = entries[offset]
        path = self._inclusion(index, entry)
        if not verify_inclusion(leaf_hash(entry), index, self.size, path, self.checkpoint.root):
            if cached:  # a bad copy on this disk: the log's own bundle decides
                self._from_cache.discard(bundle)
                entry = self._proven(index, self._fetched_bundle(bundle)[offset], path)
                self._keep_bundle(bundle)
                return entry
            raise LogProblem(
                "tampered",
                f"entry {index} or its tiles do not match the signed checkpoint",
            )
        if not cached:
            self._keep_bundle(bundle)
        return entry

    def _inclusion(self, index: int, entry: bytes) -> list[bytes]:
        """Entry ``index``'s inclusion proof from the tiles. When it does not lead to the
        signed root and tiles kept on this disk were used, it is made again from the log's
        own tiles (a bad kept copy never decides)."""
        while True:
            try:
                path = inclusion_proof(self, index, self.size)
            except (LogError, ValueError):
                if self._without_kept_tiles():
                    continue
                raise LogProblem("tampered", f"the tiles cannot prove entry {index}") from None
            if verify_inclusion(leaf_hash(entry), index, self.size, path, self.checkpoint.root):
                self._keep_tiles()
                return path
            if not self._without_kept_tiles():
                return path

    def _proven(self, index: int, entry: bytes, path: list[bytes]) -> bytes:
        if not verify_inclusion(leaf_hash(entry), index, self.size, path, self.checkpoint.root):
            raise LogProblem(
                "tampered",
                f"entry {index} or its tiles do not match the signed checkpoint",
            )
        self._keep_tiles()
        return entry

    def _bundle_rel(self, bundle: int) -> tuple[str, int]:
        width = _width_at(self.size, 0, bundle)
        return entries_path(bundle, width), width

    def _fetched_bundle(self, bundle: int) -> list[bytes]:
        rel, width = self._bundle_rel(bundle)
        data, entries = fetch_bundle(self.fetcher, rel, width)
        self._bundles[bundle] = entries
        self._raw[bundle] = data
        return entries

    def _cached_bundle(self, bundle: int) -> list[bytes] | None:
        """The bundle from the cache folder, or ``None`` (absent, unreadable, malformed)."""
        if self.cache is None:
            return None
        rel, width = self._bundle_rel(bundle)
        try:
            with (self.cache / rel).open("rb") as handle:
                data = handle.read(MAX_BUNDLE_BYTES + 1)
            entries = decode_bundle(data) if len(data) <= MAX_BUNDLE_BYTES else []
        except (OSError, LogError):
            return None
        if len(entries) != width:
            return None
        self._bundles[bundle] = entries
        self._from_cache.add(bundle)
        return entries

    def _keep_bundle(self, bundle: int) -> None:
        """Write a fetched bundle whose entry was just proven to the cache (best effort:
        the cache only saves a request)."""
        data = self._raw.pop(bundle, None)
        if self.cache is None or data is None:
            return
        from toolpin.util.fs import atomic_write

        rel, _ = self._bundle_rel(bundle)
        target = self.cache / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, data, mode=0o600, sync=False)
        except OSError:
            pass

    def extends(self, old: Checkpoint) -> bool:
        """Whether this tree extends ``old`` (the RFC 9162 consistency proof, from tiles;
        a proof that fails with tiles kept on this disk is made again from the log's)."""
        while True:
            try:
                proof = consistency_proof(self, old.size, self.size)
                ok = verify_consistency(old.size, self.size, old.root, self.checkpoint.root, proof)
            except (LogError, ValueError):
                ok = False
            if ok:
                self._keep_tiles()
                return True
            if not self._without_kept_tiles():
                return False


def _read_kept(path: Path, size: int) -> bytes | None:
    """A kept full tile of exactly ``size`` bytes, or ``None`` (absent, unreadable, short)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(size + 1)
    except OSError:
        return None
    return data if len(data) == size else None


def check_against_kept(tree: RemoteTree, kept: Checkpoint | None) -> tuple[str, str] | None:
    """``None`` when the new checkpoint may replace ``kept``; else ``(kind, message)``
    with kind ``fork`` or ``rollback`` (the caller marks the log distrusted). Raises
    ``tampered`` when the tiles cannot tell."""
    new = tree.checkpoint
    if kept is None:
        return None
    if new.size < kept.size:
        return (
            "rollback",
            f"the log was rolled back: its checkpoint has {new.size} entries, "
            f"but checkpoint {kept.size} was verified before",
        )
    if new.size == kept.size:
        if new.root == kept.root:
            return None
        return (
            "fork",
            f"the log is forked: two signed checkpoints of size {new.size} have different roots",
        )
    if tree.extends(kept):
        return None
    if not tree.root_matches():
        raise LogProblem(
            "tampered", f"the log's tiles do not match its signed checkpoint {new.size}"
        )
    return (
        "fork",
        f"the log is forked: checkpoint {new.size} does not extend "
        f"checkpoint {kept.size} verified before",
    )


def bucket_consistent(tree: RemoteTree, size: int, root: bytes) -> bool:
    """Whether the tree of (``size``, ``root``) is a prefix of the verified tree."""
    if size == tree.size:
        return root == tree.checkpoint.root
    try:
        old = Checkpoint(origin=tree.checkpoint.origin, size=size, root=root)
    except LogError:  # size 0 with another root than the empty tree's
        return False
    return tree.extends(old)


def entry_value(raw: bytes) -> dict[str, Any]:
    from toolpin.publog.entries import decode_entry

    try:
        return decode_entry(raw, canonical=False)
    except LogError:
        return {}


__all__ = [
    "RemoteTree",
    "bucket_consistent",
    "check_against_kept",
    "entry_value",
    "fetch_bundle",
    "fetch_checkpoint",
    "fetch_raw_checkpoint",
    "open_fetched",
]
