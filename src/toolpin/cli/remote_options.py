"""The options ``toolpin run`` and ``toolpin gateway`` share: how to reach a remote server
(``--url``'s headers and transport), and ``--quiet``."""

from __future__ import annotations

import click

header_option = click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="'K: V'",
    help="An HTTP header for --url (repeatable; ${env:VAR} is expanded).",
)
transport_option = click.option(
    "--transport",
    type=click.Choice(["auto", "streamable-http", "sse"]),
    default="auto",
    show_default=True,
    help="The HTTP transport of --url.",
)
quiet_option = click.option(
    "--quiet", is_flag=True, help="Say nothing on stderr unless something is blocked."
)
