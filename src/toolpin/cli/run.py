"""``toolpin run -- CMD`` / ``toolpin run --url URL``: the proxy command. Kept light: it is
on every start path."""

from __future__ import annotations

import click

from toolpin.cli.log_options import accept_public_after_option, log_options
from toolpin.cli.remote_options import (
    header_option,
    pass_run_settings,
    quiet_option,
    transport_option,
)
from toolpin.cli.server_options import server_argv, server_command, server_command_argument
from toolpin.proxy.settings import RunSettings


@server_command("run")
@click.option("--name", default=None, help="Human label for this server (default: command name).")
@click.option(
    "--timeout",
    default=30.0,
    show_default=True,
    type=float,
    help="Seconds to wait for the server while verifying.",
)
@quiet_option
@click.option(
    "--lock",
    default=None,
    metavar="FILE",
    help="Verify against this team lock instead of the local pin.",
)
@click.option(
    "--only-locked", is_flag=True, help="Refuse servers the lock does not list (needs --lock)."
)
@click.option(
    "--url",
    default=None,
    metavar="URL",
    help="A remote server (Streamable HTTP or HTTP+SSE) instead of a command.",
)
@header_option
@transport_option
@log_options
@accept_public_after_option
@server_command_argument
@pass_run_settings
def run_command(
    settings: RunSettings,
    url: str | None,
    headers: tuple[str, ...],
    transport: str,
    command: tuple[str, ...],
) -> int:
    """Sit in front of an MCP server: pin on first run, verify on every later one.

    Put it before the server command in a client config:

    \b
    toolpin run --name files -- npx -y @modelcontextprotocol/server-filesystem /tmp

    or give a remote server's URL (headers may name ${env:VAR}):

    \b
    toolpin run --name docs --url https://example.com/mcp --header 'X-Api-Key: ${env:KEY}'

    With --log URL --vkey FILE (or TOOLPIN_LOG and TOOLPIN_LOG_VKEY, or
    TOOLPIN_HOME/config.json) a first pin and a block say whether the public log
    recorded these exact definitions; --require-public refuses a first pin it never did.
    """
    argv = server_argv(command)
    if url is not None:
        if argv:
            raise click.UsageError("give either --url or a server command after --, not both")
        from toolpin.remote.start import run_remote_proxy

        return run_remote_proxy(url, settings, headers=headers, transport=transport)
    if headers or transport != "auto":
        raise click.UsageError("--header and --transport go with --url")
    if not argv:
        raise click.UsageError("give the server command after --, or --url URL")
    from toolpin.proxy.start import run_proxy

    return run_proxy(argv, settings)
