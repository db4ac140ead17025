"""``toolpin login --url URL``: authorize toolpin for an OAuth-protected remote server once,
so that ``toolpin lock`` (which never opens a browser) can list it with the stored tokens."""

from __future__ import annotations

import click


@click.command("login")
@click.option("--url", "url", required=True, metavar="URL", help="The remote MCP server.")
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="'K: V'",
    help="An HTTP header to send (repeatable; ${env:VAR} is expanded).",
)
def login_command(url: str, headers: tuple[str, ...]) -> int:
    """Authorize toolpin for a remote server (OAuth, in the browser); tokens are stored
    under TOOLPIN_HOME/oauth (0600) and refreshed by `toolpin run --url` and `toolpin lock`.

    \b
    toolpin login --url https://example.com/mcp
    """
    from toolpin.core.render import visible
    from toolpin.core.wire import identity_url
    from toolpin.remote.oauth import login
    from toolpin.remote.target import make_target

    target = make_target(url, headers=headers)

    def log(text: str) -> None:
        click.echo(text, err=True)

    outcome = login(target, log=log)
    shown = visible(identity_url(target.url))
    if outcome == "authorized":
        click.echo(f"toolpin: authorized for {shown}; the tokens are stored, 0600")
    elif outcome == "already":
        click.echo(f"toolpin: already authorized for {shown}; the stored token works")
    else:
        click.echo(f"toolpin: {shown} did not ask for authorization; nothing stored")
    return 0
