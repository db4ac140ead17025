"""How commands name the MCP servers they start or read: a server command after ``--``
(``run``, ``snapshot``, ``install-links``), the shared config that lists servers (``lock``,
``policy``), how long one whole conversation with a server may take (``lock``,
``snapshot``), and how many servers are talked to at once (``lock``, ``log crawl``).

Light at import: only ``click`` (``run`` is on every client's start path).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from click.decorators import FC


def server_command(name: str) -> Callable[[Callable[..., Any]], click.Command]:
    """A command that ends with a server command: its options come first, and click passes
    every word from the first argument on (``--`` included) to :data:`server_command_argument`."""
    return click.command(
        name, context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
    )


server_command_argument = click.argument(
    "command", nargs=-1, required=False, type=click.UNPROCESSED
)
"""``COMMAND...``: the server command, read with :func:`server_argv`."""


def server_argv(command: tuple[str, ...]) -> list[str]:
    """The server command's words, without the ``--`` before them. A first word that starts
    with ``-`` is a mistyped option (``ignore_unknown_options`` lets it through): refused."""
    argv = list(command)
    if argv and argv[0] != "--" and argv[0].startswith("-"):
        raise click.UsageError(f"no such option: {argv[0]} (put the server command after --)")
    if argv and argv[0] == "--":
        argv = argv[1:]
    return argv


def mcp_config_option(help: str) -> Callable[[FC], FC]:
    """``--config FILE`` (default ``.mcp.json``): the shared MCP config, as ``help`` says."""
    return click.option(
        "--config", "config", default=".mcp.json", show_default=True, metavar="FILE", help=help
    )


def conversation_timeout_option(help: str) -> Callable[[FC], FC]:
    """``--timeout`` (default 60 s): one whole conversation with a server, as ``help`` says."""
    return click.option(
        "--timeout",
        default=60.0,
        show_default=True,
        type=click.FloatRange(0, min_open=True),
        help=help,
    )


def concurrency_option(most: int, help: str) -> Callable[[FC], FC]:
    """``--concurrency N`` (default 4, from 1 to ``most``): how many servers are talked to at
    once, as ``help`` says."""
    return click.option(
        "--concurrency", default=4, show_default=True, type=click.IntRange(1, most), help=help
    )


def public_listen_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--public`` and ``--allow-host`` (repeatable), for the commands that listen
    (``log serve``, ``log witness serve``)."""
    func = click.option(
        "--allow-host",
        "allow_hosts",
        multiple=True,
        help="Another Host value to answer to (HOST:PORT, as clients send it); repeatable.",
    )(func)
    return click.option("--public", is_flag=True, help="Allow a non-loopback listening address.")(
        func
    )
