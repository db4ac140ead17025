"""``toolpin policy``: admin policy files for Claude Code, Copilot, Codex and Cursor."""

from __future__ import annotations

import click

from toolpin.cli.launcher_options import chosen_launcher, force_option, launcher_option
from toolpin.cli.log_options import accept_public_after_option, require_public_option
from toolpin.cli.server_options import mcp_config_option

PRODUCT_CHOICES = ("claude-code", "copilot", "codex", "cursor", "all")


@click.command("policy")
@click.argument("product", type=click.Choice(PRODUCT_CHOICES))
@mcp_config_option("The approved servers (mcpServers or servers; comments allowed).")
@click.option(
    "--lock", required=True, metavar="ABS", help="Absolute path of the lock on every machine."
)
@click.option(
    "--out",
    default="toolpin-policy",
    show_default=True,
    metavar="DIR",
    help="Write <DIR>/<product>/...",
)
@click.option(
    "--log",
    "log_url",
    default=None,
    metavar="URL",
    help="A public toolpin log every wrapped entry checks its definitions against.",
)
@click.option(
    "--vkey",
    default=None,
    metavar="ABS",
    help="The log's verifier key: its absolute path on every machine, or the key text.",
)
@require_public_option
@accept_public_after_option
@launcher_option
@force_option
def policy_command(
    product: str,
    config: str,
    lock: str,
    out: str,
    log_url: str | None,
    vkey: str | None,
    require_public: bool,
    accept_after: int | None,
    launcher: str,
    force: bool,
) -> int:
    """Write admin files that allow only the approved servers, each behind the proxy.

    Every approved local server runs as `toolpin run --lock ABS --only-locked`; remote
    servers are listed by URL; environment values are never written. With --log URL
    --vkey ABS every entry also consults that public log (with --require-public and
    --accept-public-after DAYS when given).
    """
    from pathlib import Path

    from toolpin.clients import policy
    from toolpin.core.render import counted
    from toolpin.errors import InputError

    policy.check_lock_path(lock)
    log = policy.log_policy(log_url, vkey, require_public=require_public, accept_after=accept_after)
    from toolpin.util.fs import read_input

    data = read_input(config, missing=f"cannot read {config} (not found)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"cannot read {config} (not UTF-8)") from None
    servers, notes = policy.read_approved(text)
    argv0 = chosen_launcher(launcher, force).argv
    products = policy.PRODUCTS if product == "all" else (product,)
    outputs = [
        policy.build(p, servers, lock=lock, launcher=argv0, notes=notes, log=log)  # type: ignore[arg-type]
        for p in products
    ]
    for output in outputs:
        target = policy.write(output, Path(out))
        names = ", ".join(f.name for f in output.files)
        click.echo(
            f"{output.product}: wrote {names} for {counted(output.server_count, 'server')} "
            f"to {target}"
        )
        click.echo(f"  {policy.DEPLOY[output.product]}")
    all_notes = dict.fromkeys(n for o in outputs for n in o.notes)
    for note in all_notes:
        click.echo(f"Note: {note}")
    click.echo(
        f"Deploy the lock at {lock} on every machine as well: --only-locked refuses any "
        "server it does not list."
    )
    if log is not None and "+" not in log.vkey:
        click.echo(f"Deploy the log's verifier key at {log.vkey} on every machine too.")
    click.echo(
        "These match each wrapped command exactly, so regenerate them when the approved list "
        "or the toolpin version changes. Deploying them is your step: nothing here is installed."
    )
    return 0
