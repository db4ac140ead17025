"""Full audit of a log directory against a pinned verifier key.

Checks, first failure wins:

1. ``checkpoint`` is signed by the pinned key (no other key counts) and names its origin;
2. every entry bundle the checkpoint covers exists, decodes exactly, and each entry is a
   strict JSON object whose ``"blob"`` reference (if any) is well formed (the RFC 8785 form
   itself is enforced by the writer, which refuses any other bytes);
3. every hash tile the checkpoint needs equals the hashes recomputed from the entries
   (level 0) or from the full tiles below (levels 1+), byte for byte;
4. the root recomputed from the entries equals the checkpoint's root;
5. every referenced blob is present and matches its digest;
6. with ``since`` (an older checkpoint the caller kept), the kept checkpoint is signed by
   the same key and the log's tree is consistent with it (RFC 9162 consistency proof built
   from the now-verified tiles): a log rolled back behind, or forked from, a checkpoint you
   kept fails.

The audit streams one bundle at a time and keeps only level-1+ hashes in memory
(``n / 256`` hashes), so it scales to large logs. Exit codes: 0 good, 1 bad log,
2 unusable input (a bad key, a missing directory, an unusable ``since`` checkpoint).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from toolpin.core.render import counted
from toolpin.errors import LogError
from toolpin.publog.blobs import BlobStore
from toolpin.publog.checkpoint import Checkpoint, open_checkpoint
from toolpin.publog.entries import blob_reference, decode_entry
from toolpin.publog.merkle import (
    HASH_SIZE,
    leaf_hash,
    perfect_root,
    tree_root,
    verify_consistency,
)
from toolpin.publog.note import Verifier
from toolpin.publog.tiles import (
    CHECKPOINT_FILE,
    TILE_HEIGHT,
    TILE_WIDTH,
    TileHashSource,
    _Files,
    decode_bundle,
    entries_path,
    max_file_bytes,
    read_bounded,
    tile_path,
)

if TYPE_CHECKING:
    from toolpin.publog.policy import Policy

__all__ = ["VerifyResult", "verify_log"]

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class VerifyResult:
    """Outcome of :func:`verify_log`. ``reason`` is one line, safe to print."""

    ok: bool
    exit_code: int  # 0 good, 1 bad log, 2 unusable input
    reason: str
    checkpoint: Checkpoint | None = None
    entries: int = 0
    blobs: int = 0
    since_size: int | None = None


class _Bad(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Unusable(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Levels:
    """Hash source over recomputed hashes: ``{tile level: (first index, hashes)}``."""

    def __init__(self, levels: dict[int, tuple[int, list[bytes]]]) -> None:
        self._levels = levels

    def node(self, level: int, index: int) -> bytes:
        tile_level, height = divmod(level, TILE_HEIGHT)
        first, hashes = self._levels[tile_level]
        start = (index << height) - first
        count = 1 << height
        if start < 0 or start + count > len(hashes):
            raise LogError("internal error: subtree outside the recomputed hashes")
        return perfect_root(hashes[start : start + count])


def _read_exact(root: Path, rel: str) -> bytes:
    try:
        return read_bounded(root / rel, max_file_bytes(rel))
    except FileNotFoundError:
        raise _Bad(f"{rel} is missing") from None
    except LogError:
        raise _Bad(f"{rel} is larger than any valid file of its kind") from None
    except OSError as exc:
        raise _Bad(f"{rel} cannot be read ({exc.strerror})") from None


def verify_log(
    log_dir: str | Path,
    vkey: str | Verifier,
    since: str | bytes | None = None,
    *,
    progress: Progress | None = None,
    policy: Policy | None = None,
) -> VerifyResult:
    """Audit the log in ``log_dir`` against the pinned verifier key ``vkey``.

    ``since`` is the text of an older checkpoint of the same log that the caller kept.
    ``progress(done, total)`` is called after each entry bundle. With a witness
    ``policy``, a checkpoint without its quorum's cosignatures is a bad log.
    """
    checkpoint: Checkpoint | None = None
    counts = [0, 0]
    try:
        verifier = vkey if isinstance(vkey, Verifier) else _verifier(vkey)
        root = Path(log_dir)
        if not root.is_dir():
            raise _Unusable(f"{root} is not a directory")
        old = _kept_checkpoint(since, verifier) if since is not None else None
        checkpoint = _checked_checkpoint(root, verifier, policy)
        levels = _audit_tree(root, checkpoint, counts, progress)
        if tree_root(_Levels(levels), checkpoint.size) != checkpoint.root:
            raise _Bad("the root recomputed from the entries is not the checkpoint's root")
        if old is not None:
            _check_consistency(root, old, checkpoint)
    except _Unusable as exc:
        return VerifyResult(False, 2, exc.reason, checkpoint, counts[0], counts[1])
    except _Bad as exc:
        return VerifyResult(False, 1, exc.reason, checkpoint, counts[0], counts[1])
    since_size = old.size if old is not None else None
    reason = (
        f"verified {counted(checkpoint.size, 'entry')} and {counted(counts[1], 'blob')} "
        "at the signed checkpoint"
    )
    if old is not None:
        reason += f", consistent with the kept checkpoint of size {old.size}"
    return VerifyResult(True, 0, reason, checkpoint, counts[0], counts[1], since_size)


def _verifier(text: str) -> Verifier:
    try:
        return Verifier.from_text(text)
    except LogError as exc:
        raise _Unusable(f"unusable verifier key: {exc.message}") from None


def _kept_checkpoint(since: str | bytes, verifier: Verifier) -> Checkpoint:
    try:
        return open_checkpoint(since, verifier)
    except LogError as exc:
        raise _Unusable(f"the kept checkpoint is unusable: {exc.message}") from None


def _checked_checkpoint(root: Path, verifier: Verifier, policy: Policy | None) -> Checkpoint:
    raw = _read_exact(root, CHECKPOINT_FILE)
    try:
        checkpoint = open_checkpoint(raw, verifier)
        if policy is not None:
            policy.check(raw, verifier)
    except LogError as exc:
        raise _Bad(exc.message) from None
    return checkpoint


def _audit_tree(
    root: Path, checkpoint: Checkpoint, counts: list[int], progress: Progress | None
) -> dict[int, tuple[int, list[bytes]]]:
    size = checkpoint.size
    blobs = BlobStore(root)
    seen_blobs: set[str] = set()
    full_bundles, last_width = divmod(size, TILE_WIDTH)
    upper: list[bytes] = []
    partial: list[bytes] = []
    bundles = full_bundles + (1 if last_width else 0)
    for n in range(bundles):
        width = TILE_WIDTH if n < full_bundles else last_width
        rel = entries_path(n, width)
        try:
            entries = decode_bundle(_read_exact(root, rel))
        except LogError:
            raise _Bad(f"{rel} is truncated") from None
        if len(entries) != width:
            raise _Bad(f"{rel} holds {len(entries)} entries, not {width}")
        hashes = []
        for offset, entry in enumerate(entries):
            index = n * TILE_WIDTH + offset
            try:
                ref = blob_reference(decode_entry(entry, canonical=False))
            except LogError as exc:
                raise _Bad(f"entry {index}: {exc.message}") from None
            if ref is not None and ref not in seen_blobs:
                try:
                    blobs.check(ref)
                except LogError as exc:
                    raise _Bad(f"entry {index}: {exc.message}") from None
                seen_blobs.add(ref)
                counts[1] += 1
            hashes.append(leaf_hash(entry))
        tile = tile_path(0, n, width)
        if _read_exact(root, tile) != b"".join(hashes):
            raise _Bad(f"{tile} does not match the hashes of {rel}")
        for older, w in _older_partials(root, tile_path(0, n), width):
            if _read_exact(root, older) != b"".join(hashes[:w]):
                raise _Bad(f"{older} (for an older checkpoint) does not match the log")
        for older, w in _older_partials(root, entries_path(n), width):
            try:
                if decode_bundle(_read_exact(root, older)) != entries[:w]:
                    raise _Bad(f"{older} (for an older checkpoint) does not match the log")
            except LogError:
                raise _Bad(f"{older} is truncated") from None
        if width == TILE_WIDTH:
            upper.append(perfect_root(hashes))
        else:
            partial = hashes
        counts[0] += width
        if progress is not None:
            progress(counts[0], size)
    levels: dict[int, tuple[int, list[bytes]]] = {0: (full_bundles * TILE_WIDTH, partial)}
    level = 1
    while size >> (TILE_HEIGHT * level):
        count = size >> (TILE_HEIGHT * level)
        if len(upper) != count:
            raise LogError("internal error: level hash count")
        levels[level] = (0, upper)
        above: list[bytes] = []
        for n in range(-(-count // TILE_WIDTH)):
            chunk = upper[n * TILE_WIDTH : (n + 1) * TILE_WIDTH]
            rel = tile_path(level, n, len(chunk))
            if _read_exact(root, rel) != b"".join(chunk):
                raise _Bad(f"{rel} does not match the tiles below it")
            for older, w in _older_partials(root, tile_path(level, n), len(chunk)):
                if _read_exact(root, older) != b"".join(chunk[:w]):
                    raise _Bad(f"{older} (for an older checkpoint) does not match the log")
            if len(chunk) == TILE_WIDTH:
                above.append(perfect_root(chunk))
        upper = above
        level += 1
    return levels


def _older_partials(root: Path, base: str, width: int) -> list[tuple[str, int]]:
    """Partial files of tile ``base`` narrower than ``width``: kept for older checkpoints.

    Wider ones are left by an interrupted append beyond the checkpoint and are ignored.
    """
    try:
        names = os.listdir(root / (base + ".p"))
    except OSError:
        return []
    widths = sorted(int(n) for n in names if n.isdigit() and not n.startswith("0"))
    return [(f"{base}.p/{w}", w) for w in widths if 0 < w < width]


def _check_consistency(root: Path, old: Checkpoint, current: Checkpoint) -> None:
    if old.size > current.size:
        raise _Bad(
            f"the log (size {current.size}) is behind the kept checkpoint (size {old.size}): "
            "rolled back or truncated"
        )
    if old.size == current.size:
        if old.root != current.root:
            raise _Bad("the log and the kept checkpoint have the same size but other roots: fork")
        return
    source = TileHashSource(_Files(root), current.size)
    from toolpin.publog.merkle import consistency_proof

    proof = consistency_proof(source, old.size, current.size)
    if not all(len(h) == HASH_SIZE for h in proof) or not verify_consistency(
        old.size, current.size, old.root, current.root, proof
    ):
        raise _Bad(
            f"the log is not consistent with the kept checkpoint of size {old.size}: "
            "it was forked or rewritten"
        )
