"""Where a tiled log's files are, and the entry-bundle format: the light part of
:mod:`toolpin.publog.tiles` (no file system, no signing), so a client that reads a
published log (:mod:`toolpin.evidence`) pays for nothing else. :mod:`toolpin.publog.tiles`
re-exports every name; the layout is documented there.
"""

from __future__ import annotations

from toolpin.errors import LogError
from toolpin.publog.merkle import HASH_SIZE, perfect_root

TILE_HEIGHT = 8
TILE_WIDTH = 1 << TILE_HEIGHT  # 256 hashes, 8,192 bytes
CHECKPOINT_FILE = "checkpoint"
MAX_ENTRY_BYTES = 0xFFFF
MAX_TILE_BYTES = TILE_WIDTH * HASH_SIZE
MAX_BUNDLE_BYTES = TILE_WIDTH * (2 + MAX_ENTRY_BYTES)

__all__ = [
    "CHECKPOINT_FILE",
    "MAX_BUNDLE_BYTES",
    "MAX_ENTRY_BYTES",
    "MAX_TILE_BYTES",
    "TILE_HEIGHT",
    "TILE_WIDTH",
    "decode_bundle",
    "entries_path",
    "format_index",
    "node_in_tile",
    "tile_path",
    "tile_span_root",
    "width_at",
]


def format_index(n: int) -> str:
    """Tile index in 3-digit groups, ``x``-prefixed but the last: 1234067 -> x001/x234/067."""
    if n < 0:
        raise ValueError("negative tile index")
    groups = [f"{n % 1000:03d}"]
    n //= 1000
    while n:
        groups.append(f"x{n % 1000:03d}")
        n //= 1000
    return "/".join(reversed(groups))


def _suffix(width: int) -> str:
    if not 1 <= width <= TILE_WIDTH:
        raise ValueError(f"tile width {width} outside 1..256")
    return "" if width == TILE_WIDTH else f".p/{width}"


def tile_path(level: int, index: int, width: int = TILE_WIDTH) -> str:
    """``tile/<L>/<N>[.p/<W>]``."""
    if not 0 <= level <= 63:
        raise ValueError("tile level outside 0..63")
    return f"tile/{level}/{format_index(index)}{_suffix(width)}"


def entries_path(index: int, width: int = TILE_WIDTH) -> str:
    """``tile/entries/<N>[.p/<W>]``."""
    return f"tile/entries/{format_index(index)}{_suffix(width)}"


def width_at(size: int, level: int, index: int) -> int:
    """Width of tile ``index`` at ``level`` in a tree of ``size`` (0 when absent)."""
    count = size >> (TILE_HEIGHT * level)
    full, partial = divmod(count, TILE_WIDTH)
    if index < full:
        return TILE_WIDTH
    if index == full:
        return partial
    return 0


def node_in_tile(level: int, index: int) -> tuple[int, int, int, int]:
    """Where the tree's node ``(level, index)`` lies in the hash tiles: ``(tile level, tile
    index, offset, count)``, its hash being the root of the ``count`` hashes from ``offset``
    in that tile (:func:`tile_span_root`)."""
    tile_level, height = divmod(level, TILE_HEIGHT)
    count = 1 << height
    first = index << height  # index among the level-(8*tile_level) hashes
    tile_index, offset = divmod(first, TILE_WIDTH)
    return tile_level, tile_index, offset, count


def tile_span_root(tile: bytes, offset: int, count: int) -> bytes:
    """The root of the complete subtree over the ``count`` hashes from ``offset`` in the
    bytes of a hash tile (the caller checks that the tile holds them)."""
    chunk = tile[offset * HASH_SIZE : (offset + count) * HASH_SIZE]
    return perfect_root([chunk[i : i + HASH_SIZE] for i in range(0, len(chunk), HASH_SIZE)])


def decode_bundle(data: bytes) -> list[bytes]:
    """Split an entry bundle; raises :class:`LogError` when it is truncated."""
    entries = []
    offset = 0
    while offset < len(data):
        if offset + 2 > len(data):
            raise LogError("truncated entry bundle")
        length = int.from_bytes(data[offset : offset + 2], "big")
        offset += 2
        if offset + length > len(data):
            raise LogError("truncated entry bundle")
        entries.append(data[offset : offset + length])
        offset += length
    return entries
