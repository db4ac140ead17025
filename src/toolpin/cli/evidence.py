"""``toolpin log lookup`` and ``toolpin log trust``: a digest checked against a published
log, verified here (``toolpin.evidence``); the kept checkpoint and distrust of a log.

Light at import: only ``click``; the lookup is imported inside each command.
"""

from __future__ import annotations

import click

from toolpin.cli.output_options import json_option
from toolpin.cli.publog_options import allow_private_log_option, pinned_vkey_option, policy_option


@click.command("lookup")
@click.option("--log", "url", required=True, help="The published log's base URL (https://...).")
@pinned_vkey_option
@click.option(
    "--kind",
    type=click.Choice(["surface", "tools"]),
    default="surface",
    show_default=True,
    help="Which digest: the whole surface, or the tools set.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1, max=60),
    default=3.0,
    show_default=True,
    help="Seconds per request (the whole lookup gets four times this).",
)
@allow_private_log_option
@json_option("Print the result as JSON.")
@policy_option
@click.argument("digest")
def lookup_cmd(
    url: str,
    vkey: str,
    kind: str,
    timeout: float,
    allow_private: bool,
    as_json: bool,
    policy_file: str | None,
    digest: str,
) -> int:
    """Whether DIGEST is publicly recorded in the log, verified on this machine.

    Exit codes: 0 recorded, 1 never recorded (as far as the log's digest index says),
    2 the log gave no verified answer (unreachable, bad signature, fork, rollback,
    tampered, distrusted) or unusable input.
    """
    from toolpin.cli.log import _vkey_text
    from toolpin.evidence.errors import LogProblem
    from toolpin.evidence.lookup import LogRef, Recorded, describe, look_up, problem_json, to_json
    from toolpin.pins.publiclog import policy_file as configured
    from toolpin.util.fs import toolpin_home

    policy = configured(toolpin_home(), policy_file)
    ref = LogRef(url=url, vkey=_vkey_text(vkey), policy=str(policy) if policy else None)
    try:
        found = look_up(
            ref,
            digest,
            kind=kind,
            home=toolpin_home(),
            timeout=timeout,
            allow_private=True if allow_private else None,
        )
    except LogProblem as problem:
        if not as_json:
            raise
        from toolpin.core.render import safe_json

        click.echo(safe_json(problem_json(problem)))
        return 2
    if as_json:
        from toolpin.core.render import safe_json

        click.echo(safe_json(to_json(found)))
    else:
        click.echo(describe(found))
    return 0 if isinstance(found, Recorded) else 1


@click.command("trust")
@click.option(
    "--reset",
    is_flag=True,
    help="Forget the kept checkpoint and any distrust: the next lookup starts afresh.",
)
@click.argument("origin")
def trust_cmd(reset: bool, origin: str) -> int:
    """Show what is kept for the log ORIGIN (its key's name), or --reset it.

    A log found forked or rolled back stays distrusted until a person resets it here.
    """
    from toolpin.evidence import state
    from toolpin.publog.checkpoint import read_unverified
    from toolpin.util.fs import toolpin_home

    home = toolpin_home()
    if reset:
        before = state.reset(home, origin)
        if before is None:
            click.echo(f"nothing was kept for {origin}")
        else:
            was = f" (it was distrusted: {before.distrusted.kind})" if before.distrusted else ""
            click.echo(f"forgot the kept checkpoint of {origin}{was}; the next lookup starts over")
        return 0
    kept = state.load(home, origin)
    if kept.checkpoint is None and kept.distrusted is None:
        click.echo(f"nothing is kept for {origin}")
        return 0
    if kept.checkpoint is not None:
        size = read_unverified(kept.checkpoint).size
        click.echo(f"kept checkpoint {size} of {origin} (since {(kept.kept_at or '')[:19]}Z)")
    if kept.distrusted is not None:
        click.echo(
            f"distrusted: a {kept.distrusted.kind} was detected at {kept.distrusted.at}; "
            f"`toolpin log trust --reset {origin}` to trust it again"
        )
        return 1
    return 0
