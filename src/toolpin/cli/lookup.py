"""``toolpin lookup``: the read-only MCP server (stdio, or Streamable HTTP with --http).

The server and the MCP SDK are imported inside the command only, so no other command
(and never ``toolpin run``) pays for them.
"""

from __future__ import annotations

import click

from toolpin.cli.log import _verifier
from toolpin.cli.publog_options import VKEY_HELP
from toolpin.errors import InputError


@click.command("lookup")
@click.option(
    "--log",
    "log_location",
    envvar="TOOLPIN_LOOKUP_LOG",
    default=None,
    metavar="DIR|URL",
    help="The public log: a directory, or the URL it is served at. [env TOOLPIN_LOOKUP_LOG]",
)
@click.option(
    "--vkey",
    envvar="TOOLPIN_LOOKUP_VKEY",
    default=None,
    help=VKEY_HELP + " [env TOOLPIN_LOOKUP_VKEY]",
)
@click.option(
    "--http",
    "http_port",
    type=click.IntRange(1, 65535),
    default=None,
    metavar="PORT",
    help="Serve Streamable HTTP at http://HOST:PORT/mcp (log tools only) instead of stdio.",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address --http listens on.",
)
@click.option(
    "--allow-private",
    is_flag=True,
    help="Let a log URL be on loopback or a private network (never link-local/metadata).",
)
def lookup_command(
    log_location: str | None,
    vkey: str | None,
    http_port: int | None,
    host: str,
    allow_private: bool,
) -> int:
    """Read-only MCP server: public log history and local pending reviews.

    Tools: lookup_server, server_history, check_definitions, log_status and (stdio only)
    pending_reviews. Answers never contain text a server wrote.
    """
    verifier = None
    if log_location is not None:
        if vkey is None:
            raise InputError(
                "--log needs --vkey: answers come only from a log verified by a pinned key"
            )
        verifier = _verifier(vkey)
        if "://" in log_location and not log_location.startswith(("http://", "https://")):
            raise InputError("--log takes a directory or an http(s) URL")
        if log_location.startswith(("http://", "https://")):
            from toolpin.probe.ssrf import check_url

            check_url(log_location)
        else:
            from pathlib import Path

            if not Path(log_location).is_dir():
                raise InputError(f"--log {log_location} is not a directory")
    elif vkey is not None:
        raise InputError("--vkey without --log: name the log to verify")
    # The server and the MCP SDK only once the options are known to be usable.
    import anyio

    from toolpin.lookup.server import serve_http, serve_stdio
    from toolpin.lookup.source import LogSource
    from toolpin.lookup.tools import Lookup
    from toolpin.util.fs import toolpin_home

    # A URL log keeps its checkpoint (and any distrust) in TOOLPIN_HOME, as `run --log` does.
    source = LogSource(log_location, verifier, allow_private=allow_private, home=toolpin_home())
    if http_port is None:
        anyio.run(serve_stdio, Lookup(source))
    else:
        from toolpin.lookup.server import bind

        try:
            sock = bind(host, http_port)
        except OSError as exc:
            raise InputError(
                f"cannot listen on {host}:{http_port} ({exc.strerror or 'refused'})"
            ) from None
        click.echo(
            f"toolpin lookup: serving the log tools at http://{host}:{http_port}/mcp", err=True
        )
        anyio.run(serve_http, Lookup(source, local=False), sock, host)
    return 0
