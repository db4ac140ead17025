"""The options that name a public log to consult (``run``, ``show``, ``review``,
``approve``): its URL, its verifier key and the ``require-public`` policy. Without them
the environment or ``TOOLPIN_HOME/config.json`` may name one (docs/proxy.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

log_option = click.option(
    "--log",
    "log_url",
    default=None,
    metavar="URL",
    help="A public toolpin log (its site URL) to check the definitions against.",
)
vkey_option = click.option(
    "--vkey",
    default=None,
    metavar="FILE",
    help="The verifier key of --log: a file holding it (last line used), or the key text.",
)
require_public_option = click.option(
    "--require-public",
    is_flag=True,
    help="Refuse definitions the log never recorded, or a log that cannot be checked.",
)


def log_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--log URL --vkey FILE --require-public``."""
    return log_option(vkey_option(require_public_option(func)))


accept_public_after_option = click.option(
    "--accept-public-after",
    "accept_after",
    default=None,
    type=click.IntRange(1, 3650),
    metavar="DAYS",
    help="Accept a change the log recorded at least DAYS ago whose labels aim at nothing "
    "the model reads (audited); every other change still waits for a person.",
)
