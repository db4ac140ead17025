"""``toolpin log crawl``: discover servers, probe them safely, append what changed.

Output: one progress line per server on stderr as its probe starts and ends; on stdout a
table (one row per server: name, status, seconds, tools, package, reason) whose last line is
the summary, or the JSON summary with ``--json``. Server-written text (names, stderr hints)
is shown through :func:`toolpin.core.render.visible`; ``--json`` is ASCII-only.

Light at import: only ``click`` here; the crawler (``httpx2``, the log engine) is imported
inside the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from toolpin.cli.witness import witness_option

if TYPE_CHECKING:
    from toolpin.crawl.runner import CrawlEvent, CrawlSummary, ServerResult

SOURCE_CHOICES = ("config", "registry", "npm", "github")


@click.command("crawl")
@click.option("--log", "log_dir", required=True, help="The log directory (created if missing).")
@click.option(
    "--key",
    "key_file",
    default=None,
    help="The log's signing key file (default: the key text in $TOOLPIN_LOG_KEY).",
)
@click.option(
    "--servers",
    "servers",
    default=None,
    type=click.Path(dir_okay=False),
    help="A client-style MCP config (mcpServers) of servers to crawl.",
)
@click.option(
    "--source",
    "sources",
    multiple=True,
    type=click.Choice(SOURCE_CHOICES),
    help="Where to find servers (repeatable). Default: config with --servers, "
    "else registry, npm and github.",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Probe at most N servers.")
@click.option(
    "--concurrency",
    type=click.IntRange(1, 256),
    default=4,
    show_default=True,
    help="Parallel probes.",
)
@click.option(
    "--allow-exec",
    is_flag=True,
    help="Install package candidates (npm, PyPI) in a scratch prefix and run them.",
)
@click.option(
    "--allow-private",
    is_flag=True,
    help="Let HTTP probes reach loopback and private addresses (never link-local/metadata).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=30.0,
    show_default=True,
    help="Seconds allowed for each probe, from the server's start.",
)
@click.option(
    "--install-timeout",
    type=click.FloatRange(min=0.1),
    default=300.0,
    show_default=True,
    help="Seconds allowed for installing one server's package.",
)
@click.option(
    "--state",
    "state_file",
    default=None,
    help="Crawl state file (default: <log name>.crawl-state.sqlite next to the log directory).",
)
@click.option(
    "--cache-dir",
    "cache_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Shared package caches (default: crawl in the cache directory, ~/.cache/toolpin).",
)
@witness_option
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--full", is_flag=True, help="Ignore the registry's updated_since mark.")
@click.option(
    "--wait",
    "lock_timeout",
    type=click.FloatRange(min=0),
    default=600.0,
    show_default=True,
    help="Seconds to wait for another crawl of the same log to finish.",
)
def crawl_cmd(
    log_dir: str,
    key_file: str | None,
    servers: str | None,
    sources: tuple[str, ...],
    limit: int | None,
    concurrency: int,
    allow_exec: bool,
    allow_private: bool,
    timeout: float,
    install_timeout: float,
    state_file: str | None,
    cache_dir: str | None,
    witnesses: tuple[tuple[str, str], ...],
    as_json: bool,
    full: bool,
    lock_timeout: float,
) -> int:
    """Crawl MCP servers and log every new or changed surface (prints a table per server,
    or the JSON summary with --json).

    A server's failure is recorded in crawl state and never stops the crawl. Names in
    OPTOUT.txt (log directory or working directory) are never probed. With --witness,
    the new checkpoint is then sent to each witness and published with the cosignatures
    it got (as `log witness push` does; exit 1 if a witness did not cosign, 3 if one holds
    another history of the log).
    """
    from toolpin.crawl.runner import CrawlOptions, crawl
    from toolpin.probe.ssrf import AddressPolicy
    from toolpin.publog.keys import load_signer

    chosen: tuple[Any, ...] = sources or (("config",) if servers else ("registry", "npm", "github"))
    if "config" in chosen and not servers:
        raise click.UsageError("--source config needs --servers CONFIG.json")
    if servers and not Path(servers).is_file():
        raise click.BadParameter(f"{servers} does not exist", param_hint="--servers")
    signer = load_signer(key_file)
    options = CrawlOptions(
        log_dir=Path(log_dir),
        signer=signer,
        sources=chosen,
        servers_config=Path(servers) if servers else None,
        limit=limit,
        concurrency=concurrency,
        allow_exec=allow_exec,
        policy=AddressPolicy(allow_private=allow_private),
        timeout=timeout,
        install_timeout=install_timeout,
        state_path=Path(state_file) if state_file else None,
        cache_dir=Path(cache_dir) if cache_dir else None,
        full=full,
        lock_timeout=lock_timeout,
    )
    summary = crawl(options, _progress_line)
    pushed = None
    if witnesses and (Path(log_dir) / "checkpoint").exists():
        from toolpin.cli.witness import push_lines, push_to

        pushed = push_to(log_dir, signer.verifier, witnesses, 10.0)
        for line in push_lines(pushed):
            click.echo(line, err=True)
    if as_json:
        from toolpin.core.render import safe_json

        doc = summary.to_json()
        if pushed is not None:
            from toolpin.cli.witness import push_json

            doc["witnesses"] = push_json(pushed)
        click.echo(safe_json(doc))
    else:
        click.echo("\n".join(summary_table(summary)))
    return 0 if pushed is None else pushed.exit_code


def _progress_line(event: CrawlEvent) -> None:
    """One stderr line per event that names a server (and per source, and the signing)."""
    from toolpin.core.render import clip, counted, visible

    name = clip(visible(event.name or ""), 60)
    if event.kind == "source":
        line = f"source {event.detail}: {counted(event.total, 'candidate')}"
        if event.status:
            line += f" (failed: {visible(event.status)})"
    elif event.kind == "start":
        line = f"probing {counted(event.total, 'server')}"
    elif event.kind == "probe":  # two counts: how many probes have started, have finished
        line = f"started {event.done} of {event.total}: {name}"
    elif event.kind == "done":
        took = f" ({event.seconds:.1f}s)" if event.seconds is not None else ""
        reason = f": {clip(visible(event.detail), 160)}" if event.detail else ""
        line = f"finished {event.done} of {event.total}: {name} {event.status}{took}{reason}"
    else:
        line = f"signing {counted(event.total, 'new entry', 'new entries')}"
    click.echo(line, err=True)


def _package_label(result: ServerResult) -> str:
    package = result.package
    if package is None:
        return "-"
    from toolpin.core.render import visible

    label = package.name if package.version is None else f"{package.name}@{package.version}"
    return visible(label if package.ecosystem != "oci" else package.name)


def _reason(result: ServerResult) -> str:
    from toolpin.core.render import clip, visible

    parts = []
    if result.reason:
        text = visible(result.reason)
        if result.status == "failed" and result.hint:
            text += f" — {result.hint}"
        parts.append(text)
    if result.note:
        parts.append(f"package {visible(result.note)}")
    return clip("; ".join(parts), 300)


def summary_table(summary: CrawlSummary) -> list[str]:
    """The human output: a header, one row per server, and the summary line last."""
    from toolpin.core.render import clip, visible

    rows = [("NAME", "STATUS", "SECS", "TOOLS", "PACKAGE", "REASON")]
    for result in summary.results:
        obs = result.observation
        tools = obs.snapshot.counts().get("tools") if obs is not None else None
        rows.append(
            (
                clip(visible(result.candidate.name), 40),
                result.status,
                f"{result.seconds:.1f}",
                "-" if tools is None else str(tools),
                clip(_package_label(result), 60),
                _reason(result),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = []
    for row in rows:
        cells = [
            row[i].rjust(widths[i]) if i in (2, 3) else row[i].ljust(widths[i]) for i in range(5)
        ]
        lines.append("  ".join([*cells, row[5]]).rstrip())
    lines.extend(
        f"source {report.source} failed: {visible(report.error)}"
        for report in summary.sources
        if report.error
    )
    lines.append(summary.summary_line())
    return lines
