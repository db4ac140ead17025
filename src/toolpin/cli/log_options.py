"""The options that name a public log to consult (``run``, ``show``, ``review``,
``approve``): its URL, its verifier key and the ``require-public`` policy. Without them
the environment or ``TOOLPIN_HOME/config.json`` may name one (docs/proxy.md). And the two
options of the commands that read a log's own folder (``log verify``, ``log site``,
``report``): the folder and its pinned verifier key."""

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


VKEY_HELP = "The pinned verifier key (name+id+key), or a file holding it (last line used)."

log_dir_option = click.option("--log", "log_dir", required=True, help="The log directory.")
pinned_vkey_option = click.option("--vkey", required=True, help=VKEY_HELP)


def log_dir_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--log DIR --vkey KEY``: a log's folder and the verifier key it must be signed with."""
    return log_dir_option(pinned_vkey_option(func))
