"""``toolpin log monitor``: one pass of following a published log (``toolpin.monitor``).

Light at import: only ``click``; the monitor is imported inside the command.
"""

from __future__ import annotations

from pathlib import Path

import click

from toolpin.cli.log import _verifier, load_policy_option
from toolpin.cli.output_options import json_option
from toolpin.cli.publog_options import (
    allow_private_log_option,
    pinned_vkey_option,
    policy_option,
    request_timeout_option,
)
from toolpin.errors import InputError


@click.command("monitor")
@click.option("--log", "log", required=True, help="The published log: an http(s) URL or a folder.")
@pinned_vkey_option
@policy_option
@click.option(
    "--watch",
    "watch",
    multiple=True,
    metavar="NAME|ID",
    help="Report entries of this server (its name or server id; repeat).",
)
@click.option(
    "--labels",
    "labels",
    multiple=True,
    metavar="KEY[,KEY...]",
    help="Report changes carrying any of these label keys (docs/monitor.md lists them).",
)
@click.option(
    "--state",
    "state_file",
    default=None,
    metavar="FILE",
    help="Where the pass keeps its place (default: TOOLPIN_HOME/monitor/<log>.json).",
)
@click.option(
    "--evidence",
    "evidence_dir",
    default=None,
    metavar="DIR",
    help="Where an inconsistency's two checkpoints are written (default: <state>.evidence/).",
)
@json_option("One JSON object per line.")
@click.option("--atom", "atom", default=None, metavar="FILE", help="Write an Atom feed here.")
@request_timeout_option
@allow_private_log_option
def monitor_cmd(
    log: str,
    vkey: str,
    policy_file: str | None,
    watch: tuple[str, ...],
    labels: tuple[str, ...],
    state_file: str | None,
    evidence_dir: str | None,
    as_json: bool,
    atom: str | None,
    timeout: float,
    allow_private: bool,
) -> int:
    """Follow a log from the checkpoint kept last time: prove it consistent, prove every
    new entry, and report entries of watched servers or labels. One pass per call.

    Exit codes: 0 nothing to report, 1 reported entries, 2 unusable input or an
    unreachable log (the next pass resumes), 3 the log contradicts itself or its
    signed checkpoint (both checkpoints are written as evidence).
    """
    from toolpin.core.render import safe_json
    from toolpin.evidence.fetch import private_allowed
    from toolpin.monitor.follow import Watch, default_state, monitor
    from toolpin.monitor.report import KNOWN_LABELS, event_line
    from toolpin.util.fs import ensure_private_dir, toolpin_home

    keys = frozenset(k.strip() for item in labels for k in item.split(",") if k.strip())
    unknown = sorted(keys - KNOWN_LABELS)
    if unknown:
        from toolpin.core.render import clip, visible

        raise InputError(
            f"--labels: unknown label key {clip(visible(unknown[0]), 40)}",
            advice="docs/monitor.md lists the label keys.",
        )
    verifier = _verifier(vkey)
    policy = load_policy_option(policy_file)
    if state_file is None:
        path = default_state(toolpin_home(), verifier.name)
        ensure_private_dir(path.parent)
    else:
        path = Path(state_file)

    def emit(event: dict[str, object]) -> None:
        if as_json:
            click.echo(safe_json(event, indent=None, sort_keys=True))
        else:
            click.echo(event_line(event))

    result = monitor(
        log,
        verifier,
        state_path=path,
        watch=Watch(frozenset(watch), keys),
        emit=emit,
        policy=policy,
        evidence_dir=Path(evidence_dir) if evidence_dir else None,
        atom=Path(atom) if atom else None,
        timeout=timeout,
        allow_private=private_allowed(True if allow_private else None),
    )
    summary = {
        "event": "pass",
        "origin": result.origin,
        "size": result.size,
        "since": result.since,
        "checked": result.checked,
        "reported": result.reported,
        "exit_code": result.exit_code,
        "evidence": result.evidence,
    }
    if as_json:
        click.echo(safe_json(summary, indent=None, sort_keys=True))
    elif result.exit_code == 3:
        for file in result.evidence:
            click.echo(f"evidence: {file}")
    else:
        from toolpin.core.render import counted

        step = (
            "verified from its first entry"
            if result.since is None
            else f"is consistent with checkpoint {result.since}"
        )
        click.echo(
            f"ok: {result.origin} checkpoint {result.size} {step}; "
            f"{counted(result.checked, 'new entry', 'new entries')} proven, "
            f"{result.reported} reported"
        )
    return result.exit_code
