"""``toolpin gateway --listen 127.0.0.1:PORT --url URL``: the remote proxy for MCP clients
that speak only HTTP (see :mod:`toolpin.remote.gateway`)."""

from __future__ import annotations

import click

from toolpin.cli.log_options import accept_public_after_option, log_options
from toolpin.cli.remote_options import (
    header_option,
    pass_run_settings,
    quiet_option,
    transport_option,
)
from toolpin.proxy.settings import RunSettings


@click.command("gateway")
@click.option(
    "--listen",
    required=True,
    metavar="HOST:PORT",
    help="Where to listen: a loopback address and a port (0: any free port).",
)
@click.option("--url", required=True, metavar="URL", help="The remote MCP server.")
@click.option("--name", default=None, help="Human label for this server (default: host/path).")
@header_option
@transport_option
@click.option(
    "--timeout",
    default=30.0,
    show_default=True,
    type=click.FloatRange(0, min_open=True),
    help="Seconds to wait for the server while verifying.",
)
@quiet_option
@click.option("--lock", default=None, metavar="FILE", help="Verify against this team lock.")
@click.option(
    "--only-locked", is_flag=True, help="Refuse a server the lock does not list (needs --lock)."
)
@log_options
@accept_public_after_option
@pass_run_settings
def gateway_command(
    settings: RunSettings, listen: str, url: str, headers: tuple[str, ...], transport: str
) -> int:
    """Serve a remote MCP server on this machine over Streamable HTTP, checked like
    `toolpin run --url` (held until verified, every listing checked, both eras).

    \b
    toolpin gateway --listen 127.0.0.1:8765 --name docs --url https://example.com/mcp
    then point the client at http://127.0.0.1:8765/mcp

    With --log URL --vkey FILE (or TOOLPIN_LOG and TOOLPIN_LOG_VKEY, or
    TOOLPIN_HOME/config.json) a first pin and a block say whether the public log
    recorded these exact definitions, as for `toolpin run --url`.
    """
    from toolpin.remote.gateway import parse_listen, run_gateway
    from toolpin.remote.start import gateway_options

    parse_listen(listen)  # before anything is read or written
    target, options = gateway_options(url, settings, headers=headers, transport=transport)

    def log(text: str) -> None:
        click.echo(text, err=True)

    return run_gateway(listen, target, options, log=log)
