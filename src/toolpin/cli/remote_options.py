"""The options ``toolpin run`` and ``toolpin gateway`` share: how to reach a remote server
(``--url``'s headers and transport), ``--quiet``, and the one :class:`RunSettings` both
build from their verification options."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from toolpin.proxy.settings import RunSettings

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


def pass_run_settings(func: Callable[..., Any]) -> Callable[..., Any]:
    """Give the command one ``settings`` (:class:`RunSettings`) in place of the nine
    verification options it declares (``--name`` through ``--accept-public-after``)."""

    @functools.wraps(func)
    def command(**given: Any) -> Any:
        settings = RunSettings(
            name=given.pop("name"),
            timeout=given.pop("timeout"),
            quiet=given.pop("quiet"),
            lock=given.pop("lock"),
            only_locked=given.pop("only_locked"),
            log=given.pop("log_url"),
            vkey=given.pop("vkey"),
            require_public=given.pop("require_public"),
            accept_after=given.pop("accept_after"),
        )
        return func(settings=settings, **given)

    return command
