"""``toolpin run -- CMD``: the stdio proxy command. Kept light: it is on every start path."""

from __future__ import annotations

import click


@click.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option("--name", default=None, help="Human label for this server (default: command name).")
@click.option(
    "--timeout",
    default=30.0,
    show_default=True,
    type=float,
    help="Seconds to wait for the server while verifying.",
)
@click.option("--quiet", is_flag=True, help="Say nothing on stderr unless something is blocked.")
@click.option(
    "--lock",
    default=None,
    metavar="FILE",
    help="Verify against this team lock instead of the local pin.",
)
@click.option(
    "--only-locked", is_flag=True, help="Refuse servers the lock does not list (needs --lock)."
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run_command(
    name: str | None,
    timeout: float,
    quiet: bool,
    lock: str | None,
    only_locked: bool,
    command: tuple[str, ...],
) -> int:
    """Sit in front of a stdio MCP server: pin on first run, verify on every later one.

    Put it before the server command in a client config:
    toolpin run --name files -- npx -y @modelcontextprotocol/server-filesystem /tmp
    """
    from toolpin.proxy.start import run_proxy

    argv = list(command)
    if argv and argv[0] != "--" and argv[0].startswith("-"):
        # ignore_unknown_options lets a mistyped option through as the command.
        raise click.UsageError(f"no such option: {argv[0]} (put the server command after --)")
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise click.UsageError("give the server command after --")
    return run_proxy(
        argv, name=name, timeout=timeout, quiet=quiet, lock=lock, only_locked=only_locked
    )
