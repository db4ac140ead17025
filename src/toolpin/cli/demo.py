"""``toolpin demo``: the offline demonstration. Kept light: imported on every start path."""

from __future__ import annotations

import click


@click.command("demo")
def demo_command() -> int:
    """Pin a bundled server, then see toolpin block it after it changes its tool.

    Offline, in a temporary pin store (your pins are untouched); no tool is called.
    Exit 0 when the change is blocked, 1 otherwise.
    """
    from toolpin.cli._output import stdout_color
    from toolpin.demo.run import run_demo

    color = stdout_color()
    return run_demo(lambda text: click.echo(text, color=color), color=color)
