"""Validation caps on what a crawled server may list (the reference crawler's limits,
extended to every kind). An over-limit surface is *rejected*, never truncated: a partial
record would claim a surface the server does not have.
"""

from __future__ import annotations

from typing import Final

from toolpin.core.canonical import canonical_bytes
from toolpin.core.snapshot import Snapshot
from toolpin.errors import ProbeError

MAX_DEFINITIONS: Final = 2000
"""Most definitions of one kind."""
MAX_DEFINITION_BYTES: Final = 256 << 10
"""Largest canonical size of one definition."""
MAX_KIND_BYTES: Final = 8 << 20
"""Largest canonical size of all definitions of one kind."""
MAX_KEY_CHARS: Final = 512
"""Longest name / uri / uriTemplate."""
MAX_INSTRUCTIONS_CHARS: Final = 256 << 10


def check_limits(snapshot: Snapshot) -> None:
    """Raise :class:`ProbeError` (fixed text) when ``snapshot`` exceeds a cap."""
    for listing in snapshot.listings():
        what = listing.kind.plural
        if len(listing) > MAX_DEFINITIONS:
            raise ProbeError(f"the server lists more than {MAX_DEFINITIONS} {what}")
        total = 0
        for item in listing.items:
            if len(item.key) > MAX_KEY_CHARS:
                raise ProbeError(f"one of the {what} has a key over {MAX_KEY_CHARS} characters")
            size = len(canonical_bytes(item.value))
            if size > MAX_DEFINITION_BYTES:
                raise ProbeError(f"one of the {what} is over {MAX_DEFINITION_BYTES >> 10} KiB")
            total += size
        if total > MAX_KIND_BYTES:
            raise ProbeError(f"the {what} together are over {MAX_KIND_BYTES >> 20} MiB")
    if snapshot.instructions is not None and len(snapshot.instructions) > MAX_INSTRUCTIONS_CHARS:
        raise ProbeError(f"the instructions are over {MAX_INSTRUCTIONS_CHARS >> 10} Ki characters")
