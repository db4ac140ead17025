"""``toolpin demo``: the offline demonstration. Kept light: imported on every start path."""

from __future__ import annotations

import click


@click.command("demo")
@click.option(
    "--keep",
    is_flag=True,
    help="Keep the demo's pin store afterwards, to try review and approve on it.",
)
def demo_command(keep: bool) -> int:
    """Pin a bundled server, then see toolpin block it after it changes its tool.

    Offline, in a temporary pin store (your pins are untouched; it is deleted at the end
    unless --keep); no tool is called. Exit 0 when the change is blocked, 1 otherwise.
    """
    from toolpin.cli._output import stdout_color
    from toolpin.demo.run import run_demo

    color = stdout_color()
    return run_demo(lambda text: click.echo(text, color=color), color=color, keep=keep)


@click.command("demo-server")
@click.option(
    "--state",
    metavar="FILE",
    default=None,
    help="Count sessions in FILE: the first shows the honest tool, every later one the "
    "changed one (default: $TOOLPIN_DEMO_STATE; without either it never changes).",
)
def demo_server_command(state: str | None) -> int:
    """Run the bundled harmless MCP server on stdio, to try `toolpin run` in a client.

    It offers one tool, word_count. With --state it changes that tool after its first
    session, so you can see toolpin block it. The tool is never run by toolpin.
    """
    import os

    from toolpin.demo import server

    if state is not None:
        os.environ[server.STATE_ENV] = state
    server.main()
    return 0
