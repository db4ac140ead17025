"""Offline commands: ``toolpin pin``, ``toolpin check``, ``toolpin hash``.

Parse, call :mod:`toolpin.offline`, print what :mod:`toolpin.report.offline` builds.
"""

from __future__ import annotations

from pathlib import Path

import click

from toolpin.cli._output import echo_lines, stdout_color
from toolpin.cli.output_options import json_option

_listing_option = click.option(
    "--listing",
    "listings",
    multiple=True,
    required=True,
    metavar="FILE",
    help="A saved tools/list (or full export); repeat for the pages of one listing.",
)


def _paths(values: tuple[str, ...]) -> list[Path]:
    return [Path(v) for v in values]


@click.command("pin")
@_listing_option
@click.option("--lock", "lock", required=True, metavar="FILE", help="The lockfile to write.")
@click.option(
    "--source", default=None, help="Label stored in the lock (default: the listing path)."
)
@click.option(
    "--pinned-at",
    "pinned_at",
    default=None,
    help="Timestamp stored in the lock (default: now, UTC).",
)
@click.option(
    "--server", "entry", default="default", show_default=True, help="Entry name in the lock."
)
@json_option("Print the result as JSON.")
def pin(
    listings: tuple[str, ...],
    lock: str,
    source: str | None,
    pinned_at: str | None,
    entry: str,
    as_json: bool,
) -> int:
    """Pin a saved export: write its definitions and hashes to a lockfile."""
    from toolpin.offline.check import pin as do_pin
    from toolpin.report.offline import PARTIAL_WARNING, pin_json, pin_text

    result = do_pin(
        _paths(listings), Path(lock), source=source, pinned_at=pinned_at, entry_name=entry
    )
    if as_json:
        from toolpin.core.render import safe_json

        click.echo(safe_json(pin_json(result, lock), sort_keys=True, ensure_ascii=True))
    else:
        echo_lines(pin_text(result, lock), color=stdout_color())
    if result.partial:
        click.echo(PARTIAL_WARNING, err=True)
    return 0


@click.command("check")
@_listing_option
@click.option(
    "--lock",
    "lock",
    required=True,
    metavar="FILE",
    help="A lockfile written by toolpin or by mcp-tool-pin-check.",
)
@click.option("--server", "entry", default=None, help="Which entry of a multi-server lock.")
@json_option("Print the result as JSON.")
@click.option(
    "--sarif", "sarif", default=None, metavar="OUT", help="Also write SARIF 2.1.0 to OUT."
)
@click.option(
    "--no-cache",
    "no_cache",
    is_flag=True,
    help="Verify both files in full; neither read nor write this machine's records.",
)
def check(
    listings: tuple[str, ...],
    lock: str,
    entry: str | None,
    as_json: bool,
    sarif: str | None,
    no_cache: bool,
) -> int:
    """Check a saved export against a lockfile. Exit 0 unchanged, 1 drift, 2 unusable input."""
    from toolpin.cli.fast import run_check

    return run_check(listings, lock, entry=entry, as_json=as_json, no_cache=no_cache, sarif=sarif)


@click.command("hash")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@json_option("Print the hashes as JSON.")
def hash_command(files: tuple[str, ...], as_json: bool) -> int:
    """Print each definition's hash and the set hash (the FILEs are pages of one listing).

    A FILE holding one object that is not a listing is hashed as one definition.
    """
    from toolpin.offline.hash import hash_files
    from toolpin.report.offline import hash_text

    report = hash_files(_paths(files))
    if as_json:
        from toolpin.core.render import safe_json

        click.echo(safe_json(report.to_json(), sort_keys=True))
        return 0
    echo_lines(hash_text(report), color=stdout_color())
    return 0
