"""``toolpin log``: the public transparency log (keys, audit, inclusion proofs).

Light at import: only ``click`` here; the log engine (and ``cryptography``) is imported
inside each command.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from toolpin.cli._lazy import LazyGroup
from toolpin.cli.output_options import json_option
from toolpin.cli.publog_options import (
    VKEY_HELP,
    echo_new_key,
    key_out_option,
    log_dir_or_bucket_option,
    pinned_vkey_option,
    policy_option,
)
from toolpin.errors import InputError, LogError

if TYPE_CHECKING:
    from toolpin.publog.note import Verifier
    from toolpin.publog.policy import Policy


def load_policy_option(policy_file: str | None) -> Policy | None:
    """The policy of ``--policy``, else of the environment or config (``None``: none)."""
    from toolpin.pins.publiclog import policy_file as configured
    from toolpin.util.fs import toolpin_home

    path = configured(toolpin_home(), policy_file)
    if path is None:
        return None
    from toolpin.publog.policy import load_policy

    return load_policy(path)


_LOG_COMMANDS = {
    "crawl": "toolpin.cli.crawl:crawl_cmd",
    "lookup": "toolpin.cli.evidence:lookup_cmd",
    "trust": "toolpin.cli.evidence:trust_cmd",
    "monitor": "toolpin.cli.monitor:monitor_cmd",
    "report": "toolpin.cli.report:report_command",
    "site": "toolpin.cli.site:site_cmd",
    "witness": "toolpin.cli.witness:witness_group",
    "append": "toolpin.cli.crawl:append_cmd",
    "publish": "toolpin.cli.storage:publish_cmd",
    "serve": "toolpin.cli.storage:serve_cmd",
}
"""The ``log`` commands defined in other modules, imported when one is looked up (the
others are defined below)."""


@click.group("log", cls=LazyGroup, lazy=_LOG_COMMANDS)
def log_group() -> None:
    """The public log: a C2SP tlog-tiles transparency log of observed definitions.

    Exit codes: 0 good, 1 bad log or proof, 2 unusable input.
    """


def _read_text(path: str, what: str) -> str:
    from toolpin.util.fs import read_input

    data = read_input(path, what=f"{what} {path}", missing=f"{what} {path} does not exist")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{what} {path} cannot be read (not UTF-8 text)") from None


def _vkey_text(value: str) -> str:
    """``--vkey`` is the key text, or a file whose last non-empty line is the key text."""
    candidate = Path(value)
    if "+" not in value or candidate.is_file():
        if not candidate.is_file():
            raise InputError(f"--vkey {value} is neither a verifier key nor a file")
        lines = [ln.strip() for ln in _read_text(value, "the key file").splitlines()]
        lines = [ln for ln in lines if ln]
        if not lines:
            raise InputError(f"the key file {value} is empty")
        return lines[-1]
    return value.strip()


def _verifier(value: str) -> Verifier:
    from toolpin.publog.note import Verifier

    try:
        return Verifier.from_text(_vkey_text(value))
    except LogError as exc:
        raise LogError(f"unusable verifier key: {exc.message}") from None


@log_group.command("keygen")
@click.option("--origin", required=True, help="Log origin, e.g. example.com/mcp-log.")
@key_out_option("signing key")
def keygen(origin: str, out: str) -> int:
    """Create the log's Ed25519 signing key; print the verifier key (last line)."""
    from toolpin.publog.keys import generate_key

    return echo_new_key(
        generate_key(origin, out),
        f"Wrote the signing key for {origin} to {out} (mode 0600). Keep it secret,",
        "outside the log directory; pass it to the log writer by file or $TOOLPIN_LOG_KEY.",
        "Verifier key (publish and pin it; `toolpin log verify --vkey`):",
    )


@log_group.command("verify")
@log_dir_or_bucket_option
@pinned_vkey_option
@click.option(
    "--since",
    "since",
    default=None,
    help="A checkpoint file you kept earlier: the log must be consistent with it.",
)
@json_option("Print the result as JSON.")
@policy_option
def verify(
    log_dir: str, vkey: str, since: str | None, as_json: bool, policy_file: str | None
) -> int:
    """Audit a log: signature, entries, tiles, blobs, root, --since and a site's index.

    In a published copy of the site (a folder with api/v1/digests/), also that the digest
    index has the prefix length its rule gives for the log, every bucket of that length
    and no other, each listing exactly the digests of the log's entries."""
    import dataclasses

    from toolpin.core.render import counted
    from toolpin.publog.verify import verify_log
    from toolpin.storage.workspace import readable_log

    since_text = _read_text(since, "the kept checkpoint") if since else None
    verifier = _verifier(vkey)
    with readable_log(log_dir) as local:
        result = verify_log(local, verifier, since_text, policy=load_policy_option(policy_file))
    buckets: int | None = None
    digits: int | None = None
    if result.ok and result.checkpoint is not None:
        from toolpin.site.digests import audit_digests, has_digests

        if has_digests(Path(log_dir)):
            problem, buckets, digits = audit_digests(Path(log_dir), result.checkpoint)
            if problem is not None:
                result = dataclasses.replace(
                    result, ok=False, exit_code=1, reason=f"the digest index: {problem}"
                )
    if as_json:
        from toolpin.core.render import safe_json

        cp = result.checkpoint
        click.echo(
            safe_json(
                {
                    "ok": result.ok,
                    "exit_code": result.exit_code,
                    "reason": result.reason,
                    "origin": cp.origin if cp else None,
                    "size": cp.size if cp else None,
                    "root": cp.root_b64 if cp else None,
                    "entries_checked": result.entries,
                    "blobs_checked": result.blobs,
                    "since_size": result.since_size,
                    "digest_buckets_checked": buckets,
                    "digest_prefix_digits": digits,
                }
            )
        )
        return result.exit_code
    if result.exit_code == 2:
        raise LogError(result.reason)
    if result.ok:
        assert result.checkpoint is not None
        click.echo(f"ok: {result.reason}")
        if buckets is not None:
            click.echo(
                f"digest index: {counted(buckets, 'bucket')} of "
                f"{counted(digits or 0, 'prefix digit')} match the log"
            )
        click.echo(f"origin {result.checkpoint.origin}")
        click.echo(f"size {result.checkpoint.size}")
        click.echo(f"root {result.checkpoint.root_b64}")
        return 0
    click.echo(f"FAILED: {result.reason}")
    return 1


@log_group.command("prove")
@log_dir_or_bucket_option
@click.option("--entry", "index", default=None, type=click.IntRange(min=0), help="Entry index.")
@click.option(
    "--since",
    "since",
    default=None,
    help="An older checkpoint file you kept: print a consistency proof from it instead.",
)
@click.option("--vkey", default=None, help=VKEY_HELP + " Checks the checkpoint first.")
def prove(log_dir: str, index: int | None, since: str | None, vkey: str | None) -> int:
    """Print the C2SP tlog-proof of entry N (--entry), or a consistency proof from an
    older checkpoint to the current one (--since); both check with verify-proof."""
    from toolpin.publog.proof import make_consistency_proof, make_proof
    from toolpin.publog.tiles import TileLog
    from toolpin.storage import is_bucket_url
    from toolpin.storage.workspace import readable_log

    if (index is None) == (since is None):
        raise click.UsageError("give exactly one of --entry and --since")
    verifier = _verifier(vkey) if vkey else None
    old_note = _read_text(since, "the kept checkpoint") if since is not None else None
    if not is_bucket_url(log_dir) and not Path(log_dir).is_dir():
        raise InputError(f"the log directory {log_dir} does not exist")
    with readable_log(log_dir) as local:
        log = TileLog.open(local, verifier)
        if log.checkpoint is None:
            raise LogError(f"{log_dir} has no checkpoint")
        if old_note is not None:
            text = make_consistency_proof(log, old_note, verifier=verifier)
        else:
            assert index is not None
            text = make_proof(log, index, verifier=verifier)
    click.echo(text, nl=False)
    return 0


@log_group.command("verify-proof")
@pinned_vkey_option
@click.option("--proof", "proof_file", required=True, help="The tlog-proof file.")
@click.option("--entry-file", default=None, help="The entry's exact bytes.")
@click.option(
    "--log",
    "log_dir",
    default=None,
    help="Read the entry from this log directory (or s3://bucket/prefix).",
)
@click.option(
    "--since",
    "since",
    default=None,
    help="For a consistency proof: the older checkpoint you kept (must be the proof's).",
)
@policy_option
def verify_proof_cmd(
    vkey: str,
    proof_file: str,
    entry_file: str | None,
    log_dir: str | None,
    since: str | None,
    policy_file: str | None,
) -> int:
    """Check a tlog-proof (inclusion) or a consistency proof offline against the pinned key."""
    from toolpin.publog.proof import (
        is_consistency_proof,
        parse_proof,
        verify_consistency_proof,
        verify_proof,
    )

    verifier = _verifier(vkey)
    policy = load_policy_option(policy_file)
    text = _read_text(proof_file, "the proof file")
    if is_consistency_proof(text):
        if entry_file is not None or log_dir is not None:
            raise click.UsageError("a consistency proof takes no --entry-file or --log")
        kept = _read_text(since, "the kept checkpoint") if since is not None else None
        try:
            old, new = verify_consistency_proof(text, verifier, kept=kept, policy=policy)
        except LogError as exc:
            click.echo(f"FAILED: {exc.message}")
            return 1
        click.echo(
            f"ok: {new.origin} at tree size {new.size} is consistent with tree size {old.size}"
        )
        return 0
    if since is not None:
        raise click.UsageError("--since applies to consistency proofs only")
    if (entry_file is None) == (log_dir is None):
        raise click.UsageError("give exactly one of --entry-file and --log")
    if entry_file is not None:
        from toolpin.util.fs import read_input

        entry = read_input(entry_file, what=f"the entry file {entry_file}")
    else:
        assert log_dir is not None
        from toolpin.publog.proof import verify_proof_in_log
        from toolpin.storage.workspace import readable_log

        try:
            with readable_log(log_dir) as local:
                proven, current = verify_proof_in_log(text, local, verifier, policy=policy)
        except LogError as exc:
            click.echo(f"FAILED: {exc.message}")
            return 1
        at = f"ok: entry {parse_proof(text).index} is in {proven.origin} at tree size {proven.size}"
        if current.size != proven.size:
            at += f", consistent with the current checkpoint {current.size}"
        click.echo(at)
        return 0
    try:
        checkpoint = verify_proof(text, entry, verifier, policy=policy)
    except LogError as exc:
        click.echo(f"FAILED: {exc.message}")
        return 1
    proof = parse_proof(text)
    click.echo(f"ok: entry {proof.index} is in {checkpoint.origin} at tree size {checkpoint.size}")
    return 0
