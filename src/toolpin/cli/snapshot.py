"""``toolpin snapshot`` and ``toolpin snapshot --check``: a server maintainer's baseline."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import click

from toolpin.cli._output import echo_lines, stdout_color
from toolpin.cli.output_options import json_option
from toolpin.cli.server_options import (
    conversation_timeout_option,
    server_argv,
    server_command,
    server_command_argument,
)

if TYPE_CHECKING:
    from toolpin.core.snapshot import Snapshot
    from toolpin.maintainer.baseline import Checked, Written

_DEFAULT_OUT = ".toolpin/definitions.json"


@server_command("snapshot")
@click.option(
    "--out",
    default=_DEFAULT_OUT,
    show_default=True,
    metavar="FILE",
    help="The baseline to write (or, with --check, to compare with).",
)
@click.option(
    "--name",
    default=None,
    help="The server's entry in the baseline (default: its only entry, else 'server').",
)
@click.option("--check", is_flag=True, help="Compare the live server with the baseline (for CI).")
@click.option(
    "--url", default=None, metavar="URL", help="A Streamable HTTP server instead of a command."
)
@conversation_timeout_option(
    "Seconds for the whole conversation, however slowly the server starts."
)
@json_option("Print the outcome as JSON.")
@click.option(
    "--markdown",
    is_flag=True,
    help="Print the outcome as GitHub Markdown (server text in code only), for a job summary.",
)
@click.option(
    "--comment",
    is_flag=True,
    help="With --check, in GitHub Actions on a pull request: keep one toolpin comment on it "
    "up to date (GITHUB_TOKEN with pull-requests: write).",
)
@server_command_argument
def snapshot_command(
    out: str,
    name: str | None,
    check: bool,
    url: str | None,
    timeout: float,
    as_json: bool,
    markdown: bool,
    comment: bool,
    command: tuple[str, ...],
) -> int:
    """Write the baseline of your own server's definitions, or check the server against it.

    Starts the server from the working tree, lists everything the model would read (no
    tool is called), stops it, and writes the definitions sorted, one block each, with
    their hashes. Commit the file. With --check, exits 1 when the server differs from it
    (0 when it matches, 2 when the baseline or the server is unusable), showing first
    the schema changes that leave descriptions untouched.

    \b
    toolpin snapshot -- node dist/index.js
    toolpin snapshot --check -- node dist/index.js
    """
    from toolpin.maintainer.baseline import Target, write
    from toolpin.maintainer.baseline import check as check_baseline

    argv = server_argv(command)
    if as_json and markdown:
        raise click.UsageError("choose one of --json and --markdown")
    if comment and not check:
        raise click.UsageError("--comment goes with --check")
    target = Target(argv=tuple(argv), url=url, timeout=timeout)
    accept = _accept_command(out, name, url, argv)
    path = Path(out)
    if not check:
        written = write(path, target, name)
        _print_written(written, out, accept, as_json=as_json, markdown=markdown)
        return 0
    checked = check_baseline(path, target, name)
    if comment:
        _comment(checked, out, accept)
    _print_checked(checked, out, accept, as_json=as_json, markdown=markdown)
    return 0 if checked.ok else 1


def _accept_command(out: str, name: str | None, url: str | None, argv: list[str]) -> str:
    words = ["toolpin", "snapshot"]
    if out != _DEFAULT_OUT:
        words += ["--out", out]
    if name is not None:
        words += ["--name", name]
    if url is not None:
        return shlex.join([*words, "--url", url])
    return shlex.join(words) + " -- " + shlex.join(argv)


def _counts(snap: Snapshot) -> dict[str, int]:
    """Definitions held, by singular kind (``{"tool": 3}``)."""
    return {x.kind.value.replace("_", " "): len(x) for x in snap.listings() if len(x)}


def _print_written(
    written: Written, out: str, accept: str, *, as_json: bool, markdown: bool
) -> None:
    from toolpin.core.render import Line, counted, safe_json, visible

    if as_json:
        doc = {
            "status": "written" if written.changed else "unchanged",
            "name": written.name,
            "baseline": out,
            "surfaceHash": written.snapshot.surface_hash(),
            "counts": written.snapshot.counts(),
        }
        click.echo(safe_json(doc))
        return
    if markdown:
        from toolpin.report.markdown import written_markdown

        keys = {x.kind.plural: [d.key for d in x.items] for x in written.snapshot.listings()}
        text = written_markdown(written.name, out, keys, accept=accept, created=written.created)
        click.echo(text, nl=False)
        return
    held = (
        ", ".join(counted(n, kind) for kind, n in _counts(written.snapshot).items())
        or "no definitions"
    )
    shown = f"{visible(out)} ({visible(written.name)}: {held})"
    lines = [Line(f"wrote {shown}" if written.changed else f"{shown} is up to date", "good")]
    if written.changed:
        lines.append(
            Line(
                "Commit it. `toolpin snapshot --check` (or the GitHub Action) then shows every "
                "change to a definition in the pull request that makes it."
            )
        )
    echo_lines(lines, color=stdout_color())


def _print_checked(
    checked: Checked, out: str, accept: str, *, as_json: bool, markdown: bool
) -> None:
    if as_json:
        from toolpin.core.render import safe_json
        from toolpin.report.baseline import check_json

        click.echo(safe_json(check_json(checked.name, out, checked.drift)))
        return
    if markdown:
        click.echo(_markdown(checked, out, accept), nl=False)
        return
    from toolpin.report.baseline import check_lines

    echo_lines(check_lines(checked.name, out, checked.drift, accept=accept), color=stdout_color())


def _markdown(checked: Checked, out: str, accept: str) -> str:
    from toolpin.report.markdown import check_markdown

    return check_markdown(
        checked.name, out, checked.drift, accept=accept, counts=_counts(checked.observed)
    )


def _comment(checked: Checked, out: str, accept: str) -> None:
    from toolpin.maintainer.github import CommentError, pull_request_from_env, upsert

    try:
        pr = pull_request_from_env(os.environ)
        posted = upsert(pr, _markdown(checked, out, accept), create=not checked.ok)
    except CommentError as exc:
        click.echo(f"toolpin: warning: no pull-request comment: {exc.message}", err=True)
        return
    if posted.action != "skipped":
        click.echo(f"toolpin: {posted.action} the pull request's toolpin comment", err=True)
