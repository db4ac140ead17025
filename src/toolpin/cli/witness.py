"""``toolpin log witness``: a C2SP tlog-witness (``serve``, ``keygen``) and the log's side
of it (``push``).

Light at import: only ``click``; the witness package is imported inside each command.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from toolpin.cli.output_options import json_option
from toolpin.cli.publog_options import (
    echo_new_key,
    key_out_option,
    log_dir_option,
    pinned_vkey_option,
    request_timeout_option,
)
from toolpin.cli.server_options import public_listen_options

if TYPE_CHECKING:
    from toolpin.publog.note import Verifier
    from toolpin.witness.push import PushOutcome


@click.group("witness")
def witness_group() -> None:
    """Witnesses: cosign a log's checkpoints after checking they extend what they saw.

    A witness (`serve`) keeps, per log, the latest checkpoint it cosigned and cosigns a
    new one only with a valid consistency proof from it (C2SP tlog-witness,
    cosignature/v1). The log (`push`) collects cosignatures and publishes them in its
    checkpoint.
    """


@witness_group.command("keygen")
@click.option("--name", required=True, help="The witness's name, e.g. witness.example.com/w1.")
@key_out_option("key")
def keygen(name: str, out: str) -> int:
    """Create a witness's Ed25519 cosignature key; print its verifier key (last line)."""
    from toolpin.witness.keys import generate_witness_key

    return echo_new_key(
        generate_witness_key(name, out),
        f"Wrote the witness key for {name} to {out} (mode 0600). Keep it secret.",
        "Witness verifier key (give it to logs and verifiers; type 0x04, cosignature/v1):",
    )


@witness_group.command("serve")
@click.option("--key", "key_file", required=True, help="The witness's private key file.")
@click.option(
    "--logs",
    "logs_file",
    required=True,
    help="The logs to witness: a file of `log <vkey> [url]` lines (a tlog-policy file).",
)
@click.option(
    "--listen",
    default="127.0.0.1:7380",
    show_default=True,
    help="HOST:PORT to listen on (port 0: any free port).",
)
@click.option(
    "--state",
    "state_dir",
    default=None,
    help="Where the latest cosigned checkpoint of each log is kept "
    "(default: TOOLPIN_HOME/witness).",
)
@public_listen_options
def serve(
    key_file: str,
    logs_file: str,
    listen: str,
    state_dir: str | None,
    public: bool,
    allow_hosts: tuple[str, ...],
) -> int:
    """Serve POST /add-checkpoint until interrupted.

    Answers 200 with a cosignature line, 409 with the size it holds when the old size is
    not it, 422 for a consistency proof that fails, 403 or 404 for unknown keys or logs.
    """
    from pathlib import Path

    from toolpin.util.clock import utc_now
    from toolpin.util.fs import toolpin_home
    from toolpin.witness.cosigner import Witness
    from toolpin.witness.keys import load_witness_signer
    from toolpin.witness.logs import load_known_logs
    from toolpin.witness.server import WitnessServer, parse_listen
    from toolpin.witness.state import WitnessState

    signer = load_witness_signer(key_file)
    logs = load_known_logs(logs_file)
    state = WitnessState.open(Path(state_dir) if state_dir else toolpin_home() / "witness")
    host, port = parse_listen(listen)

    def event(text: str) -> None:
        click.echo(f"{utc_now()} {text}", err=True)

    server = WitnessServer(
        Witness(signer, logs, state),
        host,
        port,
        public=public,
        allowed_hosts=allow_hosts,
        log=event,
    )
    click.echo(f"witness {signer.name} on {server.url}/add-checkpoint")
    click.echo(f"verifier key: {signer.key.text}")
    click.echo(f"logs: {len(logs.keys)}; state: {state.directory}")
    sys.stdout.flush()
    server.serve_until_interrupted()
    return 0


def witness_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--witness VKEY URL`` (repeatable), shared by ``witness push`` and ``log crawl``."""
    return click.option(
        "--witness",
        "witnesses",
        multiple=True,
        nargs=2,
        metavar="VKEY URL",
        help="A witness: its cosignature key (or a file holding it) and its URL (POSTs go "
        "to URL/add-checkpoint); repeatable.",
    )(func)


def push_to(
    log_dir: str,
    verifier: Verifier,
    witnesses: Sequence[tuple[str, str]],
    timeout: float,
    *,
    state: str | None = None,
) -> PushOutcome:
    """Parse the ``--witness`` pairs and push the log's checkpoint to them (``state``: the
    file remembering each witness's size; default under TOOLPIN_HOME)."""
    from pathlib import Path

    from toolpin.cli.log import _vkey_text
    from toolpin.errors import LogError
    from toolpin.publog.cosignature import parse_witness_vkey
    from toolpin.witness.push import WitnessTarget, default_state_path, push_checkpoint

    targets = []
    for key_text, url in witnesses:
        try:
            key = parse_witness_vkey(_vkey_text(key_text))
        except LogError as exc:
            raise LogError(f"unusable witness key: {exc.message}") from None
        targets.append(WitnessTarget(key=key, url=url))
    memory = Path(state) if state else default_state_path(verifier.name)
    return push_checkpoint(Path(log_dir), verifier, targets, state=memory, timeout=timeout)


def push_json(outcome: PushOutcome) -> dict[str, Any]:
    return {
        "origin": outcome.checkpoint.origin,
        "size": outcome.checkpoint.size,
        "published": outcome.published,
        "cosigned": outcome.cosigned,
        "witnesses": [r.as_json() for r in outcome.results],
    }


def push_lines(outcome: PushOutcome) -> list[str]:
    from toolpin.core.render import visible

    lines = []
    for r in outcome.results:
        if r.cosigned:
            lines.append(f"cosigned  {visible(r.witness)} (proof from size {r.old_size})")
        else:
            mark = "CONFLICT" if r.conflict else "FAILED  "
            lines.append(f"{mark}  {visible(r.witness)}: {r.reason}")
    cp = outcome.checkpoint
    if outcome.published:
        lines.append(
            f"published {visible(cp.origin)} at size {cp.size} with {outcome.cosigned} of"
            f" {len(outcome.results)} cosignatures"
        )
    elif outcome.cosigned:
        lines.append("not published: the checkpoint changed while the witnesses were asked")
    else:
        lines.append(f"not published: no witness cosigned {visible(cp.origin)} at size {cp.size}")
    return lines


@witness_group.command("push")
@log_dir_option
@pinned_vkey_option
@witness_option
@click.option(
    "--state",
    "state_file",
    default=None,
    help="The file remembering each witness's last cosigned size "
    "(default: under TOOLPIN_HOME/witness-push).",
)
@request_timeout_option
@json_option("Print the result as JSON.")
def push(
    log_dir: str,
    vkey: str,
    witnesses: tuple[tuple[str, str], ...],
    state_file: str | None,
    timeout: float,
    as_json: bool,
) -> int:
    """Ask each witness to cosign the log's checkpoint; publish the cosignatures in it.

    Exit codes: 0 every witness cosigned, 1 some did not (what was got is published),
    3 a witness holds another history of this log (a fork), 2 unusable input.
    """
    from toolpin.cli.log import _verifier

    if not witnesses:
        raise click.UsageError("give at least one --witness VKEY URL")
    verifier = _verifier(vkey)
    outcome = push_to(log_dir, verifier, witnesses, timeout, state=state_file)
    if as_json:
        from toolpin.core.render import safe_json

        click.echo(safe_json(push_json(outcome)))
    else:
        click.echo("\n".join(push_lines(outcome)))
    return outcome.exit_code
