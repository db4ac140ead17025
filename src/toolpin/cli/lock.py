"""``toolpin lock`` and ``toolpin lock --check``: the team lock."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from toolpin.cli._output import echo_lines, stdout_color
from toolpin.cli.log_options import log_option, vkey_option
from toolpin.cli.output_options import json_option
from toolpin.cli.server_options import (
    concurrency_option,
    conversation_timeout_option,
    mcp_config_option,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from toolpin.core.render import Line
    from toolpin.pins.lockproofs import ProofCheck
    from toolpin.pins.publiclog import Evidence
    from toolpin.probe.http import Authorizer
    from toolpin.team.lock import LockReport


def _stored_authorization(url: str) -> Authorizer | None:
    """:func:`toolpin.remote.oauth.stored_authorization`, imported (with the HTTP client
    and the OAuth code) only when a remote server is locked."""
    from toolpin.remote.oauth import stored_authorization

    return stored_authorization(url)


@click.command("lock")
@mcp_config_option("The shared MCP config (mcpServers, VS Code servers, or Codex TOML).")
@click.option(
    "--out",
    "out",
    default="toolpin.lock",
    show_default=True,
    metavar="FILE",
    help="The lockfile to write or check.",
)
@click.option("--check", is_flag=True, help="Compare with the lock instead of writing it (for CI).")
@json_option("With --check: print the outcome as JSON (keys in docs/teamlock.md).")
@click.option("--definitions-only", is_flag=True, help="Do not resolve or hold package versions.")
@conversation_timeout_option(
    "Seconds per server for the whole conversation, however slowly it starts."
)
@click.option(
    "--client-capabilities",
    "client_capabilities",
    default=None,
    metavar="LIST",
    help="Client capabilities declared to each server while listing it: comma-separated "
    "among elicitation, roots, sampling, or 'none' (default: what the lock records, "
    "else all three).",
)
@concurrency_option(32, "Servers started at once.")
@click.option(
    "--skills",
    "skills",
    default=None,
    metavar="DIR",
    type=click.Path(file_okay=False, path_type=Path),
    help="Also lock the project's skills in DIR (such as .claude/skills); later runs "
    "and --check use the folder the lock records.",
)
@log_option
@vkey_option
def lock_command(
    config: str,
    out: str,
    check: bool,
    as_json: bool,
    definitions_only: bool,
    timeout: float,
    client_capabilities: str | None,
    concurrency: int,
    skills: Path | None,
    log_url: str | None,
    vkey: str | None,
) -> int:
    """Lock every local server of a shared config: definitions and package versions.

    Starts each server, reads what the model would read (no tool is called), stops it.
    With --check, exits 1 on any difference from the lock (0 when all match).
    With a public log (--log URL --vkey FILE, or the configured one) each server's
    locked definitions are looked up in it, and the lock records the log's proof of each
    one it recorded; --check verifies those proofs offline, then against the log.
    """
    from toolpin.team import lock as teamlock

    if as_json and not check:
        from toolpin.errors import InputError

        raise InputError("--json goes with --check (writing the lock prints what it wrote)")

    def progress(text: str) -> None:
        if sys.stderr.isatty():
            from toolpin.core.render import visible

            click.echo(f"toolpin: {visible(text)}", err=True)

    caps: tuple[str, ...] | None = None
    if client_capabilities is not None:
        caps = tuple(c for c in client_capabilities.split(",") if c.strip() not in ("", "none"))
    options = teamlock.LockOptions(
        remote_auth=_stored_authorization,
        definitions_only=definitions_only,
        timeout=timeout,
        concurrency=concurrency,
        client_capabilities=caps,
        progress=progress,
        skills=skills,
    )
    from toolpin.util.fs import toolpin_home

    if check:
        proofs = _proofs(Path(out), log_url, vkey)  # an unusable proof stops here (exit 2)
        report = teamlock.check(Path(config), Path(out), options)
        evidence = _evidence(report, Path(out), log_url, vkey)
        if as_json:
            from toolpin.core.render import safe_json

            doc = teamlock.check_json(report)
            for server in doc["servers"]:
                if evidence is not None:
                    found = evidence.get(server["name"])
                    server["log"] = found.to_json() if found is not None else None
                if proofs:  # only for a lock holding proofs: old locks keep their keys
                    proof = proofs.get(server["name"])
                    server["proof"] = proof.to_json() if proof is not None else None
            click.echo(safe_json(doc))
        else:
            echo_lines(check_lines(report, evidence, proofs), color=stdout_color())
        return 0 if report.ok else 1
    from dataclasses import replace

    from toolpin.pins.lockproofs import Recorder

    recorder = Recorder(toolpin_home(), url=log_url, vkey=vkey)
    report = teamlock.lock(Path(config), Path(out), replace(options, annotate=recorder))
    lines = lock_lines(report, out, recorder.evidence, recorder.recorded)
    if recorder.problem is not None:
        from toolpin.core.render import Line

        lines.append(Line(f"log: {recorder.problem}", "medium"))
    echo_lines(lines, color=stdout_color())
    return 0 if report.ok else 1


def _proofs(lock_path: Path, log_url: str | None, vkey: str | None) -> dict[str, ProofCheck]:
    """The lock's public-log proofs, verified (none when there is no lock yet: the check
    says so)."""
    if not lock_path.exists():
        return {}
    from toolpin.lockfile.native import read_lock
    from toolpin.pins.lockproofs import check_proofs
    from toolpin.util.fs import toolpin_home

    servers = read_lock(lock_path).servers
    return check_proofs(servers, toolpin_home(), url=log_url, vkey=vkey, lock_path=lock_path)


def _evidence(
    report: LockReport, lock_path: Path, log_url: str | None, vkey: str | None
) -> dict[str, Evidence] | None:
    """What the configured public log says about each server's definitions the lock
    holds (``lock --check``; ``lock`` asks through :class:`toolpin.pins.lockproofs.Recorder`)."""
    from toolpin.lockfile.native import read_lock
    from toolpin.pins.publiclog import evidence_each
    from toolpin.util.fs import toolpin_home

    locked = read_lock(lock_path).servers
    entries = {o.name: locked[o.name] for o in report.outcomes if o.name in locked}
    digests = {name: entry.snapshot.surface_hash() for name, entry in entries.items()}
    return evidence_each(toolpin_home(), digests, url=log_url, vkey=vkey)


def _outcome_lines(
    report: LockReport,
    *,
    full: bool = False,
    evidence: dict[str, Evidence] | None = None,
    proofs: Mapping[str, str] | None = None,
) -> list[Line]:
    """Each server's outcome; ``full`` (``--check``) adds the whole diff of a change, as
    the proxy's block report prints it."""
    from toolpin.core.render import Line, visible
    from toolpin.report.text import review_lines, summary

    lines: list[Line] = []
    for outcome in report.outcomes:
        style = None if outcome.ok else ("bad" if outcome.status != "failed" else "medium")
        lines.append(Line(f"{visible(outcome.name)}: {visible(outcome.message)}", style))
        found = evidence.get(outcome.name) if evidence is not None else None
        if found is not None:
            lines.append(
                Line(
                    f"  log: {found.about('the locked definitions')}",
                    None if found.recorded else "medium",
                )
            )
        proof = proofs.get(outcome.name) if proofs is not None else None
        if proof is not None:
            lines.append(Line(f"  {proof}"))
        if outcome.drift is not None:
            lines.extend(review_lines(outcome.drift) if full else summary(outcome.drift))
        lines.extend(
            Line(f"  {visible(h)}" if h.startswith("fix:") else f"  hint: {visible(h)}", "medium")
            for h in outcome.hints
        )
        lines.extend(Line(f"  note: {visible(n)}", "dim") for n in outcome.notes)
    for name, reason in report.skipped:
        lines.append(Line(f"{visible(name)}: skipped ({visible(reason)})", "dim"))
    if report.skills or report.skills_gone:
        from toolpin.skills.report import lock_lines as skill_lines

        lines += skill_lines(report.skills, report.skills_gone, full=full)
    return lines


def lock_lines(
    report: LockReport,
    out: str,
    evidence: dict[str, Evidence] | None = None,
    proofs: Mapping[str, str] | None = None,
) -> list[Line]:
    from toolpin.core.render import Line, counted

    lines = _outcome_lines(report, evidence=evidence, proofs=proofs)
    if report.wrote:
        lines += [
            Line(f"wrote {out}"),
            Line(
                "Commit it. A pull request that changes a server now shows exactly what its "
                "tools tell the model."
            ),
            Line(f"Pin each teammate's proxy to it: toolpin wrap --project --lock {out}"),
        ]
        if report.newest_held:
            lines.append(
                Line(
                    f"{counted(report.newest_held, 'server')} "
                    f"{'runs' if report.newest_held == 1 else 'run'} the newest version of a "
                    "package; with the lock "
                    f"{'it stays' if report.newest_held == 1 else 'they stay'}"
                    " at the version recorded here until the lock is updated."
                )
            )
    if not report.outcomes and not report.wrote:
        lines.append(Line("The config lists no local server to lock; nothing was written."))
    failed = sum(1 for o in report.outcomes if not o.ok)
    if failed:
        lines.append(Line(f"{counted(failed, 'server')} could not be locked.", "bad"))
    return lines


def check_lines(
    report: LockReport,
    evidence: dict[str, Evidence] | None = None,
    proofs: dict[str, ProofCheck] | None = None,
) -> list[Line]:
    from toolpin.core.render import Line, counted

    shown = {name: p.line() for name, p in (proofs or {}).items()}
    lines = _outcome_lines(report, full=True, evidence=evidence, proofs=shown)
    differ = [o for o in report.outcomes if not o.ok and o.status != "failed"]
    failed = [o for o in report.outcomes if o.status == "failed"]
    total = len(report.outcomes)
    skills = len(report.skills)
    if report.ok:
        every = "The server matches" if total == 1 else f"All {total} servers match"
        if skills:
            every += f", and {counted(skills, 'skill')}"
            every += " matches" if skills == 1 else " match"
        lines.append(Line(f"{every} {report.lock_path}.", "good"))
        return lines
    skills_differ = sum(1 for o in report.skills if not o.ok) + len(report.skills_gone)
    if skills_differ and not differ and not failed:
        verb = "differs" if skills_differ == 1 else "differ"
        lines.append(
            Line(f"{counted(skills_differ, 'skill')} {verb} from {report.lock_path}.", "bad")
        )
        lines.append(
            Line(
                "If the change is expected, run `toolpin lock` and commit the new lock in "
                "a pull request, so a person reads it before anyone's agent does."
            )
        )
        return lines
    if differ:
        verb = "differs" if len(differ) == 1 else "differ"
        text = f"{counted(len(differ), 'server')} {verb} from {report.lock_path}"
        if skills_differ:
            text += f" (and {counted(skills_differ, 'skill')})"
        if failed:
            text += f", {len(failed)} could not start"
    else:
        them = "it" if len(failed) == 1 else "them"
        text = (
            f"{counted(len(failed), 'server')} could not start, so {report.lock_path} "
            f"could not be checked for {them}"
        )
    lines.append(Line(text + ".", "bad"))
    if differ:
        lines.append(
            Line(
                "If the change is expected, run `toolpin lock` and commit the new lock in "
                "a pull request, so a person reads it before anyone's agent does."
            )
        )
    return lines
