"""The options the ``toolpin log`` commands share: the log they read, its pinned verifier
key, the witness policy, and how a published log is fetched (``lookup``, ``monitor``,
``witness push``). Each is defined once here, with its one help text.

Light at import: only ``click``.
"""

from __future__ import annotations

from collections.abc import Callable

import click
from click.decorators import FC

VKEY_HELP = "The pinned verifier key (name+id+key), or a file holding it (last line used)."
POLICY_HELP = (
    "A witness policy file: the checkpoint must carry its quorum's cosignatures "
    "(default: $TOOLPIN_LOG_POLICY, else config.json's log.policy)."
)


def policy_option(func: click.decorators.FC) -> click.decorators.FC:
    """``--policy FILE`` (read with :func:`toolpin.cli.log.load_policy_option`)."""
    return click.option("--policy", "policy_file", default=None, metavar="FILE", help=POLICY_HELP)(
        func
    )


pinned_vkey_option = click.option("--vkey", required=True, help=VKEY_HELP)
"""``--vkey``, required: the key a log's checkpoint must be signed with."""

log_dir_option = click.option("--log", "log_dir", required=True, help="The log directory.")
"""``--log DIR``, required: a log folder only."""

log_dir_or_bucket_option = click.option(
    "--log", "log_dir", required=True, help="The log directory, or s3://bucket/prefix."
)
"""``--log DIR|s3://bucket/prefix``, required: read from a local copy of a bucket's log."""

request_timeout_option = click.option(
    "--timeout",
    type=click.FloatRange(min=0.1, max=120),
    default=10.0,
    show_default=True,
    help="Seconds per request.",
)
"""``--timeout`` of each HTTP request to a published log or a witness."""

allow_private_log_option = click.option(
    "--allow-private",
    is_flag=True,
    help="Allow a log on a loopback or private address (also TOOLPIN_LOG_ALLOW_PRIVATE=1).",
)
"""``--allow-private``: a published log's URL may be on loopback or a private network."""


def key_out_option(what: str) -> Callable[[FC], FC]:
    """``--out FILE``, required: where ``keygen`` writes the new private ``what``."""
    return click.option(
        "--out",
        required=True,
        type=click.Path(dir_okay=False),
        help=f"Where to write the private {what} (mode 0600; never overwritten).",
    )


def echo_new_key(vkey: str, *said: str) -> int:
    """What ``keygen`` prints: the lines ``said``, then the verifier key ``vkey`` (last line,
    for scripts); exit 0."""
    for line in said:
        click.echo(line)
    click.echo(vkey)
    return 0
