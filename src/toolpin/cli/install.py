"""``toolpin install-links -- CMD``: one server's protected entry for every MCP client.

The same generator as the site's ``install/`` page (``site/static/install.js``).
"""

from __future__ import annotations

import json

import click

from toolpin.cli.launcher_options import chosen_launcher, force_option, launcher_option
from toolpin.cli.output_options import json_option
from toolpin.cli.server_options import server_argv, server_command, server_command_argument


@server_command("install-links")
@click.option("--name", default=None, help="The server's name in the client (default: derived).")
@click.option(
    "--env",
    "env",
    multiple=True,
    metavar="NAME",
    help="A variable the server needs (name only; repeat). Never a value.",
)
@launcher_option
@force_option
@click.option(
    "--client",
    "clients",
    multiple=True,
    metavar="CLIENT",
    help="Print only this output (repeat): one of the Outputs above.",
)
@json_option("Print every output as one JSON object.")
@click.option(
    "--readme",
    "readme_id",
    default=None,
    metavar="SERVER_ID",
    help="Print a README link to this log server's page instead (with --base-url).",
)
@click.option("--base-url", default=None, help="The public log site, for --readme.")
@server_command_argument
def install_links_command(
    name: str | None,
    env: tuple[str, ...],
    launcher: str,
    force: bool,
    clients: tuple[str, ...],
    as_json: bool,
    readme_id: str | None,
    base_url: str | None,
    command: tuple[str, ...],
) -> int:
    """Print the entry that runs CMD behind `toolpin run` for each MCP client.

    Outputs (--client): claude-code, claude-desktop, cursor, cursor-web, vscode,
    vscode-insiders, vscode-cli, codex, gemini, windsurf, lmstudio, lmstudio-web, goose.

    \b
    toolpin install-links --name files -- npx -y @modelcontextprotocol/server-filesystem /tmp

    A README link names the server by its log id and never carries a command:

    \b
    toolpin install-links --readme 3f2a9c0d1e4b5a67 --base-url https://log.example.org
    """
    from toolpin.clients.install_links import (
        CLIENT_TITLES,
        CLIENTS,
        InstallRequest,
        default_name,
        install_links,
        readme_link,
    )

    if readme_id is not None:
        if command or base_url is None:
            raise click.UsageError("--readme takes --base-url and no server command")
        click.echo(readme_link(base_url, readme_id))
        return 0
    argv = server_argv(command)
    if not argv:
        raise click.UsageError("give the server command after --")
    unknown = [c for c in clients if c not in CLIENTS]
    if unknown:
        raise click.UsageError(f"unknown --client {unknown[0]!r}; one of: {', '.join(CLIENTS)}")
    start = chosen_launcher(launcher, force)
    request = InstallRequest(
        argv=tuple(argv),
        name=name if name is not None else default_name(argv),
        env=env,
        launcher=start.argv,
    )
    links = install_links(request)
    chosen = [c for c in CLIENTS if not clients or c in clients]
    if as_json:
        doc = links.to_json()
        doc["outputs"] = {c: doc["outputs"][c] for c in chosen}
        doc["notes"] = {c: n for c, n in doc["notes"].items() if c in chosen}
        click.echo(json.dumps(doc, indent=2, ensure_ascii=True))
        return 0
    if len(chosen) == 1 and clients:
        click.echo(links.outputs[chosen[0]], nl=not links.outputs[chosen[0]].endswith("\n"))
        return 0
    for client in chosen:
        click.echo(f"# {CLIENT_TITLES[client]} ({client})")
        text = links.outputs[client]
        click.echo(text, nl=not text.endswith("\n"))
        if client in links.notes:
            click.echo(f"# note: {links.notes[client]}")
        click.echo()
    return 0
