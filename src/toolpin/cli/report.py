"""placeholder"""

import click


@click.command("report")
def report_command() -> int:
    return 0
