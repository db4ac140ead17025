"""``toolpin wrap`` and ``toolpin unwrap``: the proxy in front of every local server."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from toolpin.cli.launcher_options import chosen_launcher, force_option, launcher_option

if TYPE_CHECKING:
    from toolpin.clients.documents import Entry
    from toolpin.clients.locations import ConfigLocation
    from toolpin.clients.wrap import Plan


_yes_option = click.option("--yes", "-y", is_flag=True, help="Apply without asking.")
_dry_run_option = click.option("--dry-run", is_flag=True, help="Show the plan and write nothing.")


def _locations(configs: tuple[str, ...], project: bool) -> list[ConfigLocation]:
    """The files named with ``--config``, else every known client's (plus the project's)."""
    from pathlib import PurePath

    from toolpin.clients.locations import (
        ConfigLocation,
        current_system,
        explicit_config,
        known_configs,
    )

    if configs:
        from toolpin.errors import InputError

        for c in configs:
            if not os.path.lexists(c):
                raise InputError(f"cannot read {c} (not found)")
            if not os.path.isfile(c):
                raise InputError(f"cannot read {c} (not a regular file)")
        found = [explicit_config(PurePath(os.path.abspath(c))) for c in configs]
        return [ConfigLocation(c.client, c.path, c.dialect, project) for c in found]
    project_dir = PurePath(os.getcwd()) if project else None
    return known_configs(current_system(), os.environ, project_dir=project_dir)


def _print_plan(plan: Plan) -> None:
    from toolpin.core.render import visible

    for f in plan.files:
        if not f.changes and not f.error and not any(e.note for e in f.entries):
            continue
        click.echo(f"{f.location.client}  {f.path}")
        if f.error:
            click.echo(f"    {f.error}")
            continue
        for e in f.entries:
            scope = f"  ({visible(e.scope)})" if e.scope else ""
            if e.action == "protect":
                click.echo(f"  + protect    {visible(e.name)}{scope}")
            elif e.action == "unprotect":
                click.echo(f"  - unprotect  {visible(e.name)}{scope}")
            elif e.action == "add-lock":
                click.echo(f"  + add --lock {visible(e.name)}{scope}")
            else:
                click.echo(f"    {visible(e.name)}{scope}: {e.note}")
            if e.warning and e.action != "skip":
                click.echo(f"      ! {visible(e.warning)}")


def _confirm_and_apply(plan: Plan, question: str, yes: bool, dry_run: bool) -> bool:
    """Ask ``question`` (unless --yes or --dry-run), then write the plan, each file backed
    up first, and say what was written; whether it was."""
    from toolpin.clients.wrap import apply

    if not _confirm(f"{question} Each file is backed up first. [y/N]", yes, dry_run):
        return False
    for written in apply(plan):
        click.echo(f"  wrote  {written.path}")
        click.echo(f"  backup {written.backup}")
    click.echo("Restart those apps so they load the change.")
    return True


def _confirm(question: str, yes: bool, dry_run: bool) -> bool:
    if dry_run:
        click.echo("Dry run: nothing written.")
        return False
    if yes:
        return True
    if not sys.stdin.isatty():
        click.echo("Nothing written. Run again with --yes to apply.")
        return False
    answer = click.prompt(question, default="", show_default=False, prompt_suffix=" ")
    if not answer.strip().lower().startswith("y"):
        click.echo("Nothing written.")
        return False
    return True


def _nothing_found(plan: Plan, command: str, *, named: bool) -> bool:
    """No config, or configs that list no server: said once. A file named with
    ``--config`` that lists none is an error, as for ``lock`` (exit 2): every such file
    is named on stderr, and when none lists a server the command stops here."""
    from toolpin.clients.locations import CLIENT_NAMES
    from toolpin.clients.wrap import NO_SERVERS
    from toolpin.errors import ConfigError

    if not plan.files:
        click.echo(f"No MCP config found for {', '.join(CLIENT_NAMES)}.")
        click.echo(f"Point at another one with: toolpin {command} --config <file>")
        return True
    empty = plan.without_servers()
    if named and empty:
        if len(empty) == len(plan.files):
            raise ConfigError("; ".join(f"{f.path} {NO_SERVERS}" for f in empty))
        for f in empty:
            click.echo(f"toolpin: {f.path} {NO_SERVERS}", err=True)
        return False
    if len(empty) == len(plan.files):
        listed = ", ".join(str(f.path) for f in empty)
        click.echo(f"No MCP servers listed in {listed}: nothing to {command}.")
        return True
    return False


@click.command("wrap")
@_yes_option
@_dry_run_option
@click.option(
    "--config",
    "configs",
    multiple=True,
    metavar="FILE",
    help="Only this config file (repeatable; .toml is read as Codex).",
)
@click.option(
    "--project", is_flag=True, help="Also the project's shared .mcp.json, .vscode/, .cursor/."
)
@click.option("--lock", metavar="FILE", help="Enforce this lockfile in project entries.")
@launcher_option
@force_option
@click.option(
    "--remote",
    is_flag=True,
    help="Also remote (HTTP) servers: toolpin run --url. Asked per server on a terminal.",
)
def wrap_command(
    yes: bool,
    dry_run: bool,
    configs: tuple[str, ...],
    project: bool,
    lock: str | None,
    launcher: str,
    force: bool,
    remote: bool,
) -> int:
    """Put the toolpin proxy in front of every local MCP server of every known client.

    Remote servers too with --remote (on a terminal toolpin asks for each one). Every
    file is backed up under the toolpin home first; `toolpin unwrap` puts each entry
    back as it was.
    """
    from pathlib import Path

    from toolpin.clients.wrap import (
        check_lock_file,
        plan_wrap,
    )
    from toolpin.core.render import counted

    if lock and not project:
        raise click.UsageError("--lock is for the project's shared .mcp.json: add --project.")
    held: frozenset[str] = frozenset()
    if lock:
        held = check_lock_file(lock, Path.cwd())  # before anything is planned or written
    chosen = chosen_launcher(launcher, force)
    locations = _locations(configs, project)
    plan = plan_wrap(locations, launcher=chosen, lock=lock, held=held, remote=remote)
    if _nothing_found(plan, "wrap", named=bool(configs)):
        return 0
    _print_plan(plan)
    answers = _ask_remotes(plan, yes=yes or remote, dry_run=dry_run)
    if any(wanted for _key, wanted in answers):
        # The plan again, with the remote servers the user chose: planning meets the
        # remote entries in the order they were asked about (an entry that is not the
        # one expected, in a file changed meanwhile, is left alone).
        pending = iter(answers)

        def chosen_one(entry: Entry) -> bool:
            key, wanted = next(pending, (None, False))
            return wanted and key == (entry.name, entry.scope, entry.url or "")

        plan = plan_wrap(locations, launcher=chosen, lock=lock, held=held, remote=chosen_one)
        click.echo("With the remote servers you chose:")
        _print_plan(plan)
    unreadable = (
        2 if any(f.error for f in plan.files) or (configs and plan.without_servers()) else 0
    )
    count = plan.change_count
    if count == 0:
        if unreadable:
            click.echo("Nothing else to change; the files above are left as they are.")
        elif any(e.note == "already protected" for f in plan.files for e in f.entries):
            click.echo("Nothing to change: every local server found is already protected.")
        else:  # e.g. only remote servers without --remote: none is "already protected"
            click.echo("Nothing to change: the servers above are left as they are (see each note).")
        return unreadable
    if chosen.note:
        click.echo(f"note: {chosen.note}", err=True)
    if not _confirm_and_apply(plan, f"Protect {counted(count, 'server')}?", yes, dry_run):
        return unreadable
    click.echo(
        "If an app asks to allow a command, the wrapped command is: "
        f"{'toolpin' if project and lock else ' '.join(chosen.argv)} run --name <server>@<client>"
        + (f" --lock {lock}" if lock else "")
        + " <original command>"
        + (" (or --url <server URL> for a remote one)" if remote else "")
    )
    click.echo("Undo any time with: toolpin unwrap")
    return unreadable


def _ask_remotes(
    plan: Plan, *, yes: bool, dry_run: bool
) -> list[tuple[tuple[str, str | None, str], bool]]:
    """On a terminal (no --yes, --remote or --dry-run), after the plan is shown: for each
    remote server it left alone, in plan order, whether to protect it too."""
    if yes or dry_run or not sys.stdin.isatty():
        return []
    from toolpin.core.render import visible
    from toolpin.core.wire import identity_url

    answers: list[tuple[tuple[str, str | None, str], bool]] = []
    for f in plan.files:
        for e in f.entries:
            if e.offer_url is None:
                continue
            where = visible(identity_url(e.offer_url)) if e.offer_url else "no URL"
            answer = click.prompt(
                f"Also protect the remote server {visible(e.name)} ({where})? [y/N]",
                default="",
                show_default=False,
                prompt_suffix=" ",
            )
            wanted = answer.strip().lower().startswith("y")
            answers.append(((e.name, e.scope, e.offer_url), wanted))
    return answers


@click.command("unwrap")
@_yes_option
@_dry_run_option
@click.option("--config", "configs", multiple=True, metavar="FILE", help="Only this config file.")
@click.option("--project", is_flag=True, help="Also the project's shared config files.")
def unwrap_command(yes: bool, dry_run: bool, configs: tuple[str, ...], project: bool) -> int:
    """Take the toolpin proxy (or mcp-pin's) out of every wrapped server entry."""
    from toolpin.clients.wrap import plan_unwrap
    from toolpin.core.render import counted

    plan = plan_unwrap(_locations(configs, project))
    if _nothing_found(plan, "unwrap", named=bool(configs)):
        return 0
    _print_plan(plan)
    unreadable = (
        2 if any(f.error for f in plan.files) or (configs and plan.without_servers()) else 0
    )
    count = plan.change_count
    if count == 0:
        click.echo("Nothing to unwrap.")
        return unreadable
    if not _confirm_and_apply(plan, f"Unprotect {counted(count, 'server')}?", yes, dry_run):
        return unreadable
    click.echo("Your pins stay in place; toolpin wrap puts protection back.")
    return unreadable
