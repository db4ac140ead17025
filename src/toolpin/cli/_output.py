"""Terminal output helpers for the CLI: colour decisions and printing styled lines.

Colour follows :func:`toolpin.util.console.wants_color` (a TTY, never with ``NO_COLOR``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

import click

from toolpin.util.console import wants_color

if TYPE_CHECKING:
    from toolpin.core.render import Line


def stdout_color() -> bool:
    """Colour decision for standard output."""
    return wants_color(sys.stdout)


def stderr_color() -> bool:
    """Colour decision for standard error."""
    return wants_color(sys.stderr)


def echo_lines(lines: Iterable[Line], *, color: bool, err: bool = False) -> None:
    """Print styled lines (a trailing newline is added)."""
    from toolpin.core.render import to_text  # and the canonical JSON it needs: not at import

    text = to_text(lines, color=color)
    click.echo(text, err=err, color=color)
