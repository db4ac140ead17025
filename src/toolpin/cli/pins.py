"""The local pin store: ``list``, ``show``, ``review``, ``approve``, ``forget``, ``verify``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from toolpin.cli._output import echo_lines, stdout_color
from toolpin.cli.log_options import log_option, log_options, vkey_option
from toolpin.cli.output_options import json_option

if TYPE_CHECKING:
    from toolpin.core.render import Line
    from toolpin.core.snapshot import Snapshot
    from toolpin.pins.publiclog import Evidence
    from toolpin.pins.store import PinRecord


def _store() -> Any:
    from toolpin.pins.store import PinStore

    return PinStore()


def _record_json(record: PinRecord, *, full: bool) -> dict[str, Any]:
    snap = record.snapshot
    out: dict[str, Any] = {
        "id": record.id,
        "label": record.label,
        "pinned_at": record.pinned_at,
        "surface_hash": snap.surface_hash(),
        "counts": snap.counts(),
        "instructions_hash": snap.instructions_hash,
        "pending": None,
    }
    if snap.identity is not None:
        out["server"] = snap.identity.to_json()
    if record.command is not None:
        out["command"] = record.command.to_json()
    if record.pending is not None:
        out["pending"] = {
            "observed_at": record.pending.observed_at,
            "digest": record.pending.digest,
            "mid_session": record.pending.mid_session,
        }
        if record.pending.command is not None:
            from toolpin.pins.store import command_diff

            diff = command_diff(record.command, record.pending.command)
            out["pending"]["command"] = diff.to_json()
    if full:
        for listing in snap.listings():
            out[listing.kind.list_member] = {
                "set_hash": listing.set_hash,
                "items": [{"key": d.key, "hash": d.hash} for d in listing.items],
            }
    return out


@click.command("list")
@json_option("Print JSON.")
def list_command(as_json: bool) -> int:
    """List the pinned servers (a change waiting for review is marked)."""
    from toolpin.core.render import Line, plural, visible
    from toolpin.pins.store import PinRecord

    records = _store().all()
    if as_json:
        out = []
        for item in records:
            if isinstance(item, PinRecord):
                out.append(_record_json(item, full=False))
            else:
                out.append({"id": item[0], "error": item[1].message})
        from toolpin.core.render import safe_json

        click.echo(safe_json(out))
        return 0
    if not records:
        click.echo("no pinned servers yet")
        return 0
    lines: list[Line] = []
    for item in records:
        if not isinstance(item, PinRecord):
            lines.append(Line(f"{item[0]}  UNREADABLE: {item[1].message}", "bad"))
            continue
        snap = item.snapshot
        tools = len(snap.tools) if snap.tools is not None else 0
        noun = plural(tools, "tool")
        text = f"{item.id}  {tools:>3} {noun:<5}  {snap.surface_hash()[:12]}  {visible(item.label)}"
        if item.command is not None:  # a pin found by --name: its command tells it apart
            text += f"  ({visible(item.command.label)}, command {item.command.id[:8]})"
        if item.pending is not None:
            lines.append(Line(text + "  CHANGE WAITING FOR REVIEW", "bad"))
        else:
            lines.append(Line(text))
    echo_lines(lines, color=stdout_color())
    return 0


def _resolve(server_id: str | None, name: str | None) -> str:
    resolved: str = _store().resolve(server_id, name=name)
    return resolved


def _load(server_id: str | None, name: str | None) -> PinRecord:
    record: PinRecord = _store().require(_resolve(server_id, name))
    return record


_ID_ARGUMENT = click.argument("server_id", metavar="[ID]", required=False)
_NAME_OPTION = click.option(
    "--name",
    default=None,
    metavar="NAME",
    help="The server's name (its --name) instead of its id.",
)


def _snapshot_lines(snap: Snapshot, indent: str = "  ") -> list[Line]:
    from toolpin.core.render import Line, visible

    lines: list[Line] = []
    for listing in snap.listings():
        prefix = "" if listing.kind.value == "tool" else listing.kind.value.replace("_", " ") + " "
        lines.extend(
            Line(f"{indent}{d.hash[:16]}  {prefix}{visible(d.key)}") for d in listing.items
        )
    if snap.instructions_hash is not None:
        lines.append(Line(f"{indent}{snap.instructions_hash[:16]}  server instructions"))
    return lines


def _evidence(digest: str, log_url: str | None, vkey: str | None, **kw: Any) -> Evidence | None:
    """What the configured public log says about ``digest`` (``None``: no log)."""
    from toolpin.pins.publiclog import evidence_for

    return evidence_for(_store().home, digest, url=log_url, vkey=vkey, **kw)


def _evidence_lines(evidence: Evidence | None, what: str) -> list[Line]:
    from toolpin.core.render import Line

    if evidence is None:
        return []
    return [Line(f"log: {evidence.about(what)}", None if evidence.recorded else "medium")]


@click.command("show")
@_ID_ARGUMENT
@_NAME_OPTION
@json_option("Print JSON.")
@log_option
@vkey_option
def show_command(
    server_id: str | None, name: str | None, as_json: bool, log_url: str | None, vkey: str | None
) -> int:
    """Show what is pinned for one server (ID: its id or a unique prefix, 4+ hex).

    With a public log (--log URL --vkey FILE, or the configured one) it also says
    whether the log recorded the pinned definitions."""
    from toolpin.core.render import Line, visible

    record = _load(server_id, name)
    evidence = _evidence(record.snapshot.surface_hash(), log_url, vkey)
    if as_json:
        from toolpin.core.render import safe_json

        out = _record_json(record, full=True)
        if evidence is not None:
            out["log"] = evidence.to_json()
        click.echo(safe_json(out))
        return 0
    snap = record.snapshot
    lines = [
        Line(visible(record.label), "header"),
        Line(f"pinned {record.pinned_at}"),
        Line(f"surface {snap.surface_hash()}"),
        *_evidence_lines(evidence, "the pinned definitions"),
    ]
    if record.command is not None:
        lines.append(Line(_command_text(record.command), "dim"))
    if snap.identity is not None:
        lines.append(Line(f"server says it is {visible(snap.identity.label())}", "dim"))
    lines += _snapshot_lines(snap)
    if record.pending is not None:
        from toolpin.report.review import pending_additions

        lines.append(Line(f"A change is waiting for review: toolpin review {record.id}", "bad"))
        lines += _command_lines(record.command, record.pending.command)
        additions = pending_additions(snap, record.pending.snapshot)
        if additions:
            lines += [Line("It adds:", "header"), *additions]
    echo_lines(lines, color=stdout_color())
    return 0


@click.command("review")
@_ID_ARGUMENT
@_NAME_OPTION
@json_option("Print JSON (the change's labels and the log's facts).")
@log_option
@vkey_option
def review_command(
    server_id: str | None,
    name: str | None,
    as_json: bool,
    log_url: str | None,
    vkey: str | None,
) -> int:
    """Show the change waiting for review, labelled, with the full diff.

    ID is the server's id or a unique prefix of it (4+ hex); --name NAME finds it by
    the name it was started with. With a public log (--log URL --vkey FILE, or the
    configured one) it says whether the log recorded the new definitions.
    """
    from toolpin.core.render import safe_json, visible
    from toolpin.report.review import pending_review

    record = _load(server_id, name)
    if record.pending is None:
        if as_json:
            click.echo(safe_json({**_record_json(record, full=False), "changes": [], "log": None}))
            return 0
        click.echo(f"nothing pending for {visible(record.label)}")
        return 0
    evidence = _evidence(record.pending.digest, log_url, vkey)
    if as_json:
        from toolpin.core.drift import change_keys, compare

        out = _record_json(record, full=False)
        out["changes"] = change_keys(compare(record.snapshot, record.pending.snapshot))
        out["log"] = None if evidence is None else evidence.to_json()
        click.echo(safe_json(out))
        return 0
    lines = pending_review(
        label=record.label,
        server_id=record.id,
        pinned_at=record.pinned_at,
        observed_at=record.pending.observed_at,
        mid_session=record.pending.mid_session,
        digest=record.pending.digest,
        pinned=record.snapshot,
        observed=record.pending.snapshot,
        command_lines=_command_lines(record.command, record.pending.command),
    )
    extra = _evidence_lines(evidence, "the new definitions")
    if extra:
        lines = [*lines[:3], *extra, *lines[3:]]
    echo_lines(lines, color=stdout_color())
    return 0


def _command_text(command: Any) -> str:
    """``command: npx -y pkg@1.2.3`` (redacted), or its label for an older pin."""
    from toolpin.core.argvdiff import argv_text
    from toolpin.core.render import visible

    if command.argv is None:
        return f"command: {visible(command.label)} ({command.id[:8]}; not recorded in full)"
    return f"command: {argv_text(command.argv)} ({command.id[:8]})"


def _command_lines(approved: Any, now: Any) -> list[Line]:
    """The command's word diff when the observation was made with another command:
    the redacted argvs, what changed (executable path, package version, arguments)."""
    from toolpin.core.argvdiff import diff_lines
    from toolpin.core.render import Line
    from toolpin.pins.store import command_diff

    if now is None:
        return []
    lines = diff_lines(command_diff(approved, now))
    return [Line(lines[0], "bad"), *(Line(x) for x in lines[1:]), Line("")]


@click.command("approve")
@_ID_ARGUMENT
@_NAME_OPTION
@click.option(
    "--expect",
    default=None,
    metavar="DIGEST",
    help="Approve only if the waiting change is this one (as printed by review).",
)
@log_options
def approve_command(
    server_id: str | None,
    name: str | None,
    expect: str | None,
    log_url: str | None,
    vkey: str | None,
    require_public: bool,
) -> int:
    """Accept the change waiting for review: it becomes the pin (ID: its id or a unique
    prefix, 4+ hex).

    With --require-public (or the configured policy) a change the public log never
    recorded, or a log that cannot be checked, is not approved (exit 2)."""
    from toolpin.core.render import visible
    from toolpin.pins.publiclog import approval_refused

    sid = _resolve(server_id, name)
    pending = _store().require(sid).pending
    if pending is not None:
        evidence = _evidence(pending.digest, log_url, vkey, require_public=require_public)
        refused = approval_refused(evidence)
        if refused is not None:
            raise refused
        if evidence is not None:
            click.echo(f"log: {evidence.about('the new definitions')}")
            expect = expect if expect is not None else pending.digest  # what was checked
    record = _store().approve(sid, expect=expect)
    click.echo(f"re-pinned {visible(record.label)} at {record.snapshot.surface_hash()[:12]}")
    return 0


@click.command("forget")
@_ID_ARGUMENT
@_NAME_OPTION
def forget_command(server_id: str | None, name: str | None) -> int:
    """Delete a pin; the server is pinned again on its next start (ID: its id or a
    unique prefix, 4+ hex)."""
    sid = _resolve(server_id, name)
    if not _store().forget(sid):
        from toolpin.errors import InputError

        raise InputError(f"unknown server id {sid} (see `toolpin list`)")
    click.echo("forgotten; it will be pinned again on its next start")
    return 0


@click.command("verify")
@click.option(
    "--repair",
    is_flag=True,
    help="If the chain is broken: keep the file as audit.log.broken-<UTC time>, rewrite "
    "its good prefix and append a repair entry.",
)
def verify_command(repair: bool) -> int:
    """Check the local audit log's hash chain (exit 1 when broken).

    A broken chain is never extended: pin, drift, approve and forget are refused until
    `toolpin verify --repair`.
    """
    from toolpin.core.render import counted
    from toolpin.pins import audit

    store = _store()
    if repair:
        done = audit.repair(store.audit_path)
        if done is None:
            report = audit.verify_chain(store.audit_path)
            click.echo(
                f"audit log ok, {counted(report.entries, 'entry')}, chain intact; nothing to repair"
            )
            return 0
        click.echo(f"audit log was BROKEN: {done.problem}")
        click.echo(f"  kept the broken file as {done.kept_as}")
        click.echo(
            f"  rewrote its {counted(done.entries, 'good entry')} and appended a repair entry "
            f"(seq {done.entry['seq']}); the chain verifies again"
        )
        return 0
    report = audit.verify_chain(store.audit_path)
    if report.entries == 0 and report.ok:
        click.echo("no local audit log yet")
        return 0
    if report.ok:
        click.echo(f"audit log ok, {counted(report.entries, 'entry')}, chain intact")
        return 0
    click.echo(
        f"audit log BROKEN: {report.problem} (after {report.entries} good entries); "
        "toolpin records nothing more in it until: toolpin verify --repair",
        err=True,
    )
    return 1
