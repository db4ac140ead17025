"""Building big acyclic values (parsed JSON, listings) with the cyclic collector paused.

Parsing a listing creates a container for every object and array in it, and hashing it
creates a definition for every tool: hundreds of thousands of objects for a large
listing, none of which can be part of a reference cycle (a JSON tree holds no
references back up, and the definitions hold only such trees). CPython's cyclic
garbage collector still runs every 700 new containers and, now and then, walks the
whole heap; during such a build every one of those passes finds nothing to free. Pausing
it for the build cuts 15-20% of a full ``toolpin check`` (``bench/bench_offline.py``).
Reference counting still frees everything as usual; only the search for cycles waits,
and it resumes when the build ends, even when it ends with an error.

The pause nests and is safe across threads: only the caller that found the collector
running turns it back on. Code that had turned the collector off itself keeps it off.
"""

from __future__ import annotations

import gc
from types import TracebackType


class collector_paused:  # named as the context manager it is
    """``with collector_paused(): ...`` runs the block with the cyclic collector off."""

    __slots__ = ("_resume",)

    def __init__(self) -> None:
        self._resume = False

    def __enter__(self) -> None:
        self._resume = gc.isenabled()
        if self._resume:
            gc.disable()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._resume:
            gc.enable()
