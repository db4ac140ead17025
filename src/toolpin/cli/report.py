"""``toolpin log report``: what changed since a kept checkpoint, or in a month, from the
verified log (``toolpin.crawl.report``). Exit 1 when a watched server changed (or the log
does not verify, or ``--verify`` finds a difference)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from toolpin.cli.log import _read_text, _verifier, load_policy_option
from toolpin.cli.output_options import json_option
from toolpin.cli.publog_options import log_dir_option, pinned_vkey_option, policy_option
from toolpin.errors import InputError


def _now(value: str | None) -> str:
    import datetime as dt

    from toolpin.util.clock import utc_now

    if value is None:
        return utc_now()
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InputError("--now is not an ISO 8601 time (2026-12-01T00:00:00Z)") from None
    if moment.tzinfo is None:
        raise InputError("--now needs a time zone (end it with Z)")
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _dump(doc: Any) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=True) + "\n"


def _write(out: str | None, text: str) -> None:
    if out is None:
        click.echo(text, nl=False)
        return
    from toolpin.util.fs import atomic_write

    try:
        atomic_write(Path(out), text.encode("utf-8"))
    except OSError as exc:
        raise InputError(f"cannot write {out} ({exc.strerror})") from None


def _who(row: dict[str, Any]) -> str:
    name = row["name"]
    return f"{row['server']} {name}" if name else f"{row['server']} (name withheld: --show-text)"


def _since_lines(doc: dict[str, Any]) -> list[str]:
    from toolpin.core.render import counted

    since, cp = doc["since"], doc["checkpoint"]
    start = (
        f"the kept checkpoint (size {since['size']})"
        if since["kept"]
        else f"{since['cutoff']} (tree size {since['size']})"
    )
    lines = [
        f"log {cp['origin']}: {counted(doc['entries'], 'entry')} since {start}; signed "
        f"checkpoint size {cp['size']}, consistent (proof of "
        f"{counted(len(doc['consistencyProof']), 'hash', 'hashes')})"
    ]
    for row in doc["changes"]:
        mark = "*" if row["watched"] else " "
        if row["kind"] == "first-recorded":
            tools = row["counts"].get("tools", 0)
            lines.append(
                f"{mark} new      {_who(row)}  {row['observedAt']}  {counted(tools, 'tool')}  "
                f"entry {row['index']}"
            )
            continue
        t, w = row["tools"], row["window"]
        when = f"between {w['from']} and {w['to']}" + (" (crawl gap)" if w["gap"] else "")
        labels = ", ".join(row["labels"]) or "none"
        lines.append(
            f"{mark} changed  {_who(row)}  {when}  tools +{t['added']} -{t['removed']} "
            f"~{t['changed']} ({t['schemaOnly']} schema only)  labels: {labels}  "
            f"entry {row['index']}"
        )
    if not doc["changes"]:
        lines.append("nothing changed")
    if doc["watch"]:
        changed = doc["watchedChanged"]
        lines.append(
            f"watched servers changed: {', '.join(changed)}"
            if changed
            else "no watched server changed"
        )
    lines.append("each entry's inclusion proof: --json, or toolpin log prove --entry N")
    return lines


def _monthly_lines(doc: dict[str, Any]) -> list[str]:
    from toolpin.core.render import counted

    s, c = doc["servers"], doc["changes"]
    partial = " (partial: the month is not over)" if doc["partial"] else ""
    lines = [
        f"{doc['month']}{partial}: {s['changed']} of {counted(s['tracked'], 'server')} changed, "
        f"{s['recordedNew']} recorded for the first time",
        f"{counted(c['events'], 'change')}: tools +{c['toolsAdded']} -{c['toolsRemoved']} "
        f"~{c['toolsChanged']} ({c['schemaOnly']} schema only), {c['afterGap']} after a gap",
        "labels (totals): " + (", ".join(f"{k} {v}" for k, v in doc["labels"].items()) or "none"),
    ]
    lines.extend(
        f"gap: {gap['from']} to {gap['to']} (changes dated by this window: {gap['changes']})"
        for gap in doc["gaps"]
    )
    lines.append(
        f"trees: start {doc['start']['size']}, end {doc['end']['size']}, "
        f"checkpoint {doc['checkpoint']['size']} (consistency proofs in --json)"
    )
    return lines


@click.command("report")
@log_dir_option
@pinned_vkey_option
@click.option(
    "--since",
    "since",
    default=None,
    metavar="CHECKPOINT_FILE|24h|7d",
    help="A checkpoint you kept (proven consistent), or a time span back from --now.",
)
@click.option("--month", default=None, metavar="YYYY-MM", help="The monthly drift report.")
@click.option(
    "--verify",
    "verify_file",
    default=None,
    metavar="FILE",
    help="Rebuild a monthly report (--json output) from the tiles and compare.",
)
@json_option("JSON output (ASCII, terminal-safe).")
@click.option("--atom", "as_atom", is_flag=True, help="Atom feed output (with --since).")
@click.option(
    "--watch",
    "watch",
    multiple=True,
    metavar="NAME",
    help="A server id or name; exit 1 when it changed (repeat).",
)
@click.option("--show-text", is_flag=True, help="Include server-written names (made visible).")
@click.option("--now", default=None, help="The report time (ISO 8601, default: the clock).")
@click.option("--out", default=None, help="Write the report to this file (atomically).")
@policy_option
def report_command(
    log_dir: str,
    vkey: str,
    since: str | None,
    month: str | None,
    verify_file: str | None,
    as_json: bool,
    as_atom: bool,
    watch: tuple[str, ...],
    show_text: bool,
    now: str | None,
    out: str | None,
    policy_file: str | None,
) -> int:
    """Report from the verified log: --since a kept checkpoint (or 24h, 7d), or --month.

    \b
    toolpin log report --log public-log --vkey log.vkey --since kept.checkpoint --watch ID
    """
    from toolpin.crawl import report as rep

    modes = [m for m in (since, month, verify_file) if m is not None]
    if len(modes) != 1:
        raise click.UsageError("give exactly one of --since, --month and --verify")
    if as_json and as_atom:
        raise click.UsageError("give at most one of --json and --atom")
    if as_atom and since is None:
        raise click.UsageError("--atom goes with --since")
    if (show_text or watch) and since is None:
        raise click.UsageError(
            "--show-text and --watch go with --since (a monthly report never names a server's text)"
        )
    if not Path(log_dir).is_dir():
        raise InputError(f"the log directory {log_dir} does not exist")
    verifier = _verifier(vkey)
    policy = load_policy_option(policy_file)
    generated = _now(now)

    if verify_file is not None:
        try:
            doc = json.loads(_read_text(verify_file, "the report"))
        except ValueError:
            raise InputError(f"the report {verify_file} is not JSON") from None
        if not isinstance(doc, dict):
            raise InputError(f"the report {verify_file} is not a JSON object")
        if policy is not None:
            rep.load_view(log_dir, verifier, policy=policy)  # refuses a log not witnessed
        differences = rep.verify_monthly(log_dir, verifier, doc)
        if differences:
            click.echo(f"FAILED: the report differs from the log at {differences[0]}")
            if len(differences) > 1:
                click.echo(f"({len(differences) - 1} more differences)")
            return 1
        click.echo(
            f"ok: the report for {doc['month']} matches the log at checkpoint size "
            f"{doc['checkpoint']['size']}"
        )
        return 0

    if month is not None:
        view = rep.load_view(log_dir, verifier, policy=policy)
        report = rep.monthly_report(view, month, generated_at=generated)
        _write(out, _dump(report) if as_json else "\n".join(_monthly_lines(report)) + "\n")
        return 0

    assert since is not None
    span = rep.parse_duration(since)
    if span is None:
        kept = _read_text(since, "the kept checkpoint")
        view = rep.load_view(log_dir, verifier, since_note=kept, policy=policy)
        from toolpin.publog.checkpoint import open_checkpoint

        old = open_checkpoint(kept, verifier)
        report = rep.since_report(
            view,
            old_size=old.size,
            old_root=old.root,
            watch=watch,
            show_text=show_text,
            generated_at=generated,
        )
    else:
        import datetime as dt

        view = rep.load_view(log_dir, verifier, policy=policy)
        moment = dt.datetime.fromisoformat(generated.replace("Z", "+00:00"))
        report = rep.since_report(
            view, cutoff=moment - span, watch=watch, show_text=show_text, generated_at=generated
        )
    if as_atom:
        text = rep.since_atom(report)
    elif as_json:
        text = _dump(report)
    else:
        text = "\n".join(_since_lines(report)) + "\n"
    _write(out, text)
    return 1 if report["watchedChanged"] else 0
