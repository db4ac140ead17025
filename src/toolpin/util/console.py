"""Whether to colour terminal output: only on a TTY, never with ``NO_COLOR``.

``NO_COLOR`` (any non-empty value, https://no-color.org) wins; ``TOOLPIN_COLOR=1`` forces
colour (screenshots, tests).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is not imported on the start path (a cached `check`)
if TYPE_CHECKING:
    from typing import TextIO


def wants_color(stream: TextIO) -> bool:
    """Whether to colour output written to ``stream``."""
    if os.environ.get("NO_COLOR", "") != "":
        return False
    if os.environ.get("TOOLPIN_COLOR") == "1":
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
