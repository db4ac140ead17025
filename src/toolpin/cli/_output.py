"""Terminal output helpers for the CLI: colour decisions and printing styled lines.

Colour only when the stream is a terminal and ``NO_COLOR`` is not set (any value,
https://no-color.org); ``TOOLPIN_COLOR=1`` forces it (for screenshots and tests).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TextIO

import click

from toolpin.core.render import Line, to_text


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


def stdout_color() -> bool:
    """Colour decision for standard output."""
    return wants_color(sys.stdout)


def stderr_color() -> bool:
    """Colour decision for standard error."""
    return wants_color(sys.stderr)


def echo_lines(lines: Iterable[Line], *, color: bool, err: bool = False) -> None:
    """Print styled lines (a trailing newline is added)."""
    text = to_text(lines, color=color)
    click.echo(text, err=err, color=color)
