"""RFC 6962 / RFC 9162 Merkle tree hashing, proof generation and proof verification.

Hashing (RFC 9162 §2.1.1, identical to RFC 6962):

* leaf hash ``SHA-256(0x00 || entry)``;
* node hash ``SHA-256(0x01 || left || right)``;
* ``MTH`` of ``n > 1`` leaves splits at ``k``, the largest power of two smaller than ``n``;
  ``MTH`` of the empty list is ``SHA-256("")``.

Proofs are computed from a :class:`HashSource`, anything that can return the hash of a
*complete* subtree (``2**level`` leaves starting at a multiple of ``2**level``). Every range
that RFC 9162's ``PATH`` and ``SUBPROOF`` need is a left-aligned range, so its ``MTH`` is a
right-to-left fold of at most ``log2(n)`` complete subtrees; a tile reader can therefore
serve proofs without loading every leaf.

Verification follows RFC 9162 §2.1.3.2 (inclusion) and §2.1.4.2 (consistency) step by step,
including the final check that the second tree size is fully consumed (``sn == 0``): the bug
class where trailing or missing proof hashes are accepted.

Hand-written on purpose: the research (``anchors.md`` §6.4) found no audited RFC 9162
library for Python 3.11 (``aics-tlog`` needs 3.12, ``pymerkle`` asks for an audit), and the
code is small enough to check line by line against the RFC.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()

_T = TypeVar("_T")

__all__ = [
    "EMPTY_ROOT",
    "HASH_SIZE",
    "HashSource",
    "MemoryTree",
    "consistency_proof",
    "inclusion_proof",
    "largest_power_of_two_below",
    "leaf_hash",
    "level_path",
    "node_hash",
    "perfect_root",
    "root_from_inclusion",
    "subtree_hash",
    "tree_levels",
    "tree_root",
    "verify_consistency",
    "verify_inclusion",
]


def leaf_hash(entry: bytes) -> bytes:
    """RFC 6962 leaf hash: ``SHA-256(0x00 || entry)``."""
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 6962 interior node hash: ``SHA-256(0x01 || left || right)``."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def largest_power_of_two_below(n: int) -> int:
    """The largest power of two strictly smaller than ``n`` (``n >= 2``)."""
    if n < 2:
        raise ValueError("n must be at least 2")
    return 1 << ((n - 1).bit_length() - 1)


def perfect_root(hashes: Sequence[bytes]) -> bytes:
    """Root of a complete subtree whose ``len(hashes)`` (a power of two) bottom hashes are given."""
    count = len(hashes)
    if count == 0 or count & (count - 1):
        raise ValueError("a complete subtree has a power-of-two number of hashes")
    row = list(hashes)
    while len(row) > 1:
        row = [node_hash(row[i], row[i + 1]) for i in range(0, len(row), 2)]
    return row[0]


class HashSource(Protocol):
    """Anything that knows the hashes of complete subtrees of one tree."""

    def node(self, level: int, index: int) -> bytes:
        """Hash of the complete subtree of ``2**level`` leaves starting at ``index * 2**level``.

        Level 0 is the leaf hashes. Raise ``ValueError`` (or a ``LogError``) when the
        subtree is not available.
        """
        ...


def subtree_hash(source: HashSource, start: int, end: int) -> bytes:
    """``MTH(D[start:end])`` for a left-aligned, non-empty range.

    Left-aligned means ``start`` is a multiple of the largest power of two not above
    ``end - start``: every range RFC 9162 proofs use is of this form. The range is cut into
    complete subtrees (one per set bit of its width, largest first) and folded right to left.
    """
    if not 0 <= start < end:
        raise ValueError(f"empty or negative range [{start}, {end})")
    chunks: list[bytes] = []
    position = start
    remaining = end - start
    while remaining:
        level = remaining.bit_length() - 1
        width = 1 << level
        if position % width:
            raise ValueError(f"range [{start}, {end}) is not aligned to a subtree")
        chunks.append(source.node(level, position >> level))
        position += width
        remaining -= width
    result = chunks[-1]
    for chunk in reversed(chunks[:-1]):
        result = node_hash(chunk, result)
    return result


def tree_root(source: HashSource, size: int) -> bytes:
    """``MTH`` of the first ``size`` leaves (``SHA-256("")`` for the empty tree)."""
    if size < 0:
        raise ValueError("negative tree size")
    if size == 0:
        return EMPTY_ROOT
    return subtree_hash(source, 0, size)


def inclusion_proof(source: HashSource, index: int, size: int) -> list[bytes]:
    """RFC 9162 §2.1.3.1 ``PATH(index, D[0:size])``: sibling hashes from the leaf upwards."""
    return _inclusion_path(functools.partial(subtree_hash, source), index, size)


def tree_levels(leaf_hashes: Sequence[bytes]) -> list[list[bytes]]:
    """Every level of RFC 9162's tree over ``leaf_hashes``, built bottom up: level 0 is the
    leaves, each level above pairs the one below, and a last node without a pair moves up
    unchanged (it is the hash of the incomplete subtree at the tree's right edge). The
    last level holds the root; the same tree as ``MTH``, node for node."""
    levels = [list(leaf_hashes)]
    while len(levels[-1]) > 1:
        below = levels[-1]
        level = [node_hash(below[i], below[i + 1]) for i in range(0, len(below) - 1, 2)]
        if len(below) % 2:
            level.append(below[-1])
        levels.append(level)
    return levels


def level_path(levels: Sequence[Sequence[_T]], index: int) -> list[_T]:
    """:func:`inclusion_proof` of ``index`` in the tree of :func:`tree_levels` (or of any
    per-node mapping of it, such as each hash's base64): at each level the node's sibling,
    when it has one (a node without a pair has none: it moved up)."""
    if not 0 <= index < len(levels[0]):
        raise ValueError(f"leaf index {index} is outside a tree of size {len(levels[0])}")
    path: list[_T] = []
    for level in levels[:-1]:
        sibling = index ^ 1
        if sibling < len(level):
            path.append(level[sibling])
        index >>= 1
    return path


def _inclusion_path(subtree: Callable[[int, int], bytes], index: int, size: int) -> list[bytes]:
    if not 0 <= index < size:
        raise ValueError(f"leaf index {index} is outside a tree of size {size}")
    top_down: list[bytes] = []
    start, end = 0, size
    while end - start > 1:
        k = largest_power_of_two_below(end - start)
        if index < start + k:
            top_down.append(subtree(start + k, end))
            end = start + k
        else:
            top_down.append(subtree(start, start + k))
            start += k
    top_down.reverse()
    return top_down


def consistency_proof(source: HashSource, old_size: int, new_size: int) -> list[bytes]:
    """RFC 9162 §2.1.4.1 ``PROOF(old_size, D[0:new_size])`` (empty when old is 0 or equal)."""
    if not 0 <= old_size <= new_size:
        raise ValueError(f"no consistency proof from size {old_size} to size {new_size}")
    if old_size in (0, new_size):
        return []
    top_down: list[bytes] = []
    start, end = 0, new_size
    m = old_size  # relative to start
    complete = True  # RFC's "b": the subtree is a complete prefix of the old tree
    while True:
        n = end - start
        if m == n:
            if not complete:
                top_down.append(subtree_hash(source, start, end))
            break
        k = largest_power_of_two_below(n)
        if m <= k:
            top_down.append(subtree_hash(source, start + k, end))
            end = start + k
        else:
            top_down.append(subtree_hash(source, start, start + k))
            start += k
            m -= k
            complete = False
    top_down.reverse()
    return top_down


def _hashes_ok(*hashes: bytes) -> bool:
    return all(len(h) == HASH_SIZE for h in hashes)


def _climb(fn: int, sn: int) -> tuple[int, int]:
    """RFC 9162's "until LSB(fn) is set or fn is equal to 0, right-shift fn and sn equally"
    (a step of both proof verifications)."""
    while not fn & 1 and fn != 0:
        fn >>= 1
        sn >>= 1
    return fn, sn


def root_from_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes]) -> bytes | None:
    """RFC 9162 §2.1.3.2 steps 1-4: the root an inclusion proof leads to, or ``None``.

    ``None`` when the index is outside the tree, a proof element is not 32 bytes, or the
    proof is too long or too short for ``(index, size)``.
    """
    if not 0 <= index < size or not _hashes_ok(leaf, *proof):
        return None
    fn, sn = index, size - 1
    result = leaf
    for p in proof:
        if sn == 0:
            return None  # more proof than tree
        if fn & 1 or fn == sn:
            result = node_hash(p, result)
            fn, sn = _climb(fn, sn)
        else:
            result = node_hash(result, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        return None  # less proof than tree
    return result


def verify_inclusion(
    leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> bool:
    """True when ``proof`` shows that leaf hash ``leaf`` is at ``index`` in the tree ``root``."""
    computed = root_from_inclusion(leaf, index, size, proof)
    return computed is not None and _hashes_ok(root) and computed == root


def verify_consistency(
    old_size: int,
    new_size: int,
    old_root: bytes,
    new_root: bytes,
    proof: Sequence[bytes],
) -> bool:
    """RFC 9162 §2.1.4.2: True when the tree ``old_root`` is a prefix of ``new_root``.

    Edge cases outside the RFC's ``0 < old < new``: equal sizes need an empty proof and equal
    roots; old size 0 needs an empty proof and the empty-tree root.
    """
    if not 0 <= old_size <= new_size or not _hashes_ok(old_root, new_root, *proof):
        return False
    if old_size == new_size:
        return not proof and old_root == new_root
    if old_size == 0:
        return not proof and old_root == EMPTY_ROOT
    if not proof:
        return False
    path = list(proof)
    if old_size & (old_size - 1) == 0:  # an exact power of two
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False  # more proof than tree
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            fn, sn = _climb(fn, sn)
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == old_root and sr == new_root


class MemoryTree:
    """An in-memory tree that keeps every complete subtree hash (about ``2n`` hashes).

    For tests, tools and small logs; the tile log reads the same hashes from tiles.
    """

    def __init__(self, leaf_hashes: Sequence[bytes] = ()) -> None:
        self._levels: list[list[bytes]] = [[]]
        for h in leaf_hashes:
            self.append_leaf_hash(h)

    @classmethod
    def from_entries(cls, entries: Sequence[bytes]) -> MemoryTree:
        return cls([leaf_hash(e) for e in entries])

    @property
    def size(self) -> int:
        return len(self._levels[0])

    def append_leaf_hash(self, h: bytes) -> None:
        if not _hashes_ok(h):
            raise ValueError("a leaf hash is 32 bytes")
        self._levels[0].append(h)
        level = 0
        while len(self._levels[level]) % 2 == 0:
            row = self._levels[level]
            if level + 1 == len(self._levels):
                self._levels.append([])
            self._levels[level + 1].append(node_hash(row[-2], row[-1]))
            level += 1

    def append(self, entry: bytes) -> None:
        self.append_leaf_hash(leaf_hash(entry))

    def node(self, level: int, index: int) -> bytes:
        if level < 0 or index < 0 or level >= len(self._levels):
            raise ValueError(f"no complete subtree at level {level}")
        row = self._levels[level]
        if index >= len(row):
            raise ValueError(f"no complete subtree {index} at level {level}")
        return row[index]

    def root(self, size: int | None = None) -> bytes:
        return tree_root(self, self.size if size is None else self._check(size))

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        return inclusion_proof(self, index, self.size if size is None else self._check(size))

    def consistency_proof(self, old_size: int, new_size: int | None = None) -> list[bytes]:
        new = self.size if new_size is None else self._check(new_size)
        return consistency_proof(self, old_size, new)

    def _check(self, size: int) -> int:
        if not 0 <= size <= self.size:
            raise ValueError(f"size {size} is outside a tree of {self.size} leaves")
        return size
