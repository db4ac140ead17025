"""``toolpin log crawl``: discover servers, probe them safely, append what changed.

Output: one progress line per server on stderr as its probe starts and ends; on stdout a
table (one row per server: name, status, seconds, tools, package, reason) whose last line is
the summary, or the JSON summary with ``--json``. Server-written text (names, stderr hints)
is shown through :func:`toolpin.core.render.visible`; ``--json`` is ASCII-only.

Light at import: only ``click`` here; the crawler (``httpx2``, the log engine) is imported
inside the command.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.decorators import FC

from toolpin.cli.output_options import json_option
from toolpin.cli.server_options import concurrency_option
from toolpin.cli.witness import witness_option

if TYPE_CHECKING:
    from toolpin.crawl.runner import CrawlEvent, CrawlSummary, ServerResult
    from toolpin.witness.push import PushOutcome

SOURCE_CHOICES = ("config", "registry", "npm", "github")


def _log_option(*, required: bool) -> Callable[[FC], FC]:
    """``--log``: the log written to (``crawl`` may write observations instead)."""
    return click.option(
        "--log",
        "log_dir",
        required=required,
        default=None,
        help="The log directory (created if missing), or s3://bucket/prefix.",
    )


def _wait_option(others: str) -> Callable[[FC], FC]:
    """``--wait``: how long to wait for ``others`` of the same log (its lock) to finish."""
    return click.option(
        "--wait",
        "lock_timeout",
        type=click.FloatRange(min=0),
        default=600.0,
        show_default=True,
        help=f"Seconds to wait for {others} of the same log to finish.",
    )


_KEY_OPTION = click.option(
    "--key",
    "key_file",
    default=None,
    help="The log's signing key file (default: the key text in $TOOLPIN_LOG_KEY).",
)
_STATE_OPTION = click.option(
    "--state",
    "state_file",
    default=None,
    help="Crawl state file (default: <log name>.crawl-state.sqlite next to the log directory).",
)
_JSON_OPTION = json_option("Print the summary as JSON.")


@click.command("crawl")
@_log_option(required=False)
@_KEY_OPTION
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
@concurrency_option(256, "Parallel probes.")
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
@_STATE_OPTION
@click.option(
    "--cache-dir",
    "cache_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Shared package caches (default: crawl in the cache directory, ~/.cache/toolpin).",
)
@witness_option
@_JSON_OPTION
@click.option("--full", is_flag=True, help="Ignore the registry's updated_since mark.")
@click.option(
    "--shard",
    "shard_text",
    default=None,
    metavar="K/N",
    help="Probe only shard K of N of the candidates (by a hash of each one's id) and write "
    "observations, not log entries (needs --observations; `log append --from` logs them).",
)
@click.option(
    "--observations",
    "observations_dest",
    default=None,
    help="With --shard: a folder, s3://bucket/prefix or FILE.jsonl for the observations "
    "(shard-K-of-N.jsonl in a folder or prefix).",
)
@_wait_option("another crawl")
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
    shard_text: str | None,
    observations_dest: str | None,
) -> int:
    """Crawl MCP servers and log every new or changed surface (prints a table per server,
    or the JSON summary with --json).

    A server's failure is recorded in crawl state and never stops the crawl. Names in
    OPTOUT.txt (log directory or working directory) are never probed. With --witness,
    the new checkpoint is then sent to each witness and published with the cosignatures
    it got (as `log witness push` does; exit 1 if a witness did not cosign, 3 if one holds
    another history of the log).
    """
    import dataclasses

    from toolpin.crawl.observations import Shard
    from toolpin.crawl.runner import CrawlOptions, crawl
    from toolpin.probe.ssrf import AddressPolicy

    chosen: tuple[Any, ...] = sources or (("config",) if servers else ("registry", "npm", "github"))
    if "config" in chosen and not servers:
        raise click.UsageError("--source config needs --servers CONFIG.json")
    if servers and not Path(servers).is_file():
        raise click.BadParameter(f"{servers} does not exist", param_hint="--servers")
    if (shard_text is None) != (observations_dest is None):
        raise click.UsageError("--shard and --observations go together")
    if shard_text is None and log_dir is None:
        raise click.UsageError("give --log (or --shard K/N with --observations)")
    if witnesses and (shard_text is not None or (log_dir or "").startswith("s3://")):
        raise click.UsageError(
            "--witness needs a log folder (push a bucket's log with `log witness push`)"
        )
    shard = Shard.parse(shard_text) if shard_text is not None else None
    options = CrawlOptions(
        log_dir=Path(log_dir) if log_dir and shard is None else Path.cwd(),
        signer=None,
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
        shard=shard,
        optout_dirs=(Path.cwd(),) if shard is not None else None,
    )
    pushed = None
    if shard is not None:
        assert observations_dest is not None
        from toolpin.crawl.observations import encode_observations
        from toolpin.crawl.sequence import observe
        from toolpin.storage.files import write_named

        summary, outcomes = observe(options, _progress_line)
        data = encode_observations(shard, summary.ran_at, outcomes)
        where = write_named(observations_dest, shard.file_name, data, suffix=".jsonl")
        click.echo(f"wrote {len(outcomes)} observations of shard {shard} to {where}", err=True)
    else:
        assert log_dir is not None
        from toolpin.publog.keys import load_signer
        from toolpin.storage.workspace import writable_log

        signer = load_signer(key_file)
        with writable_log(log_dir) as target:
            options = dataclasses.replace(
                options, log_dir=target.path, signer=signer, after_append=target.publish
            )
            summary = crawl(options, _progress_line)
        if witnesses and (Path(log_dir) / "checkpoint").exists():
            from toolpin.cli.witness import push_lines, push_to

            pushed = push_to(log_dir, signer.verifier, witnesses, 10.0)
            for line in push_lines(pushed):
                click.echo(line, err=True)
    _echo_summary(summary, as_json, pushed)
    return 0 if pushed is None else pushed.exit_code


def _echo_summary(summary: CrawlSummary, as_json: bool, pushed: PushOutcome | None = None) -> None:
    """The summary on stdout: the table, or the JSON (with what the witnesses said)."""
    if not as_json:
        click.echo("\n".join(summary_table(summary)))
        return
    from toolpin.core.render import safe_json

    doc = summary.to_json()
    if pushed is not None:
        from toolpin.cli.witness import push_json

        doc["witnesses"] = push_json(pushed)
    click.echo(safe_json(doc))


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


@click.command("append")
@_log_option(required=True)
@_KEY_OPTION
@click.option(
    "--from",
    "sources",
    required=True,
    multiple=True,
    help="An observations file, or a folder or s3://bucket/prefix of *.jsonl files written "
    "by `log crawl --shard` (repeatable).",
)
@_STATE_OPTION
@_JSON_OPTION
@_wait_option("another crawl or append")
def append_cmd(
    log_dir: str,
    key_file: str | None,
    sources: tuple[str, ...],
    state_file: str | None,
    as_json: bool,
    lock_timeout: float,
) -> int:
    """Append the observations of sharded crawls (`log crawl --shard K/N`) to the log: the
    one sequencer. Entries are made for what is new or changed, in server-id order, under
    one signed checkpoint; the same log and observations give the same entries."""
    from toolpin.crawl.observations import MAX_FILE_BYTES
    from toolpin.crawl.sequence import append_observations
    from toolpin.publog.keys import load_signer
    from toolpin.storage.files import read_named
    from toolpin.storage.workspace import writable_log

    signer = load_signer(key_file)
    batches = read_named(sources, suffix=".jsonl", cap=MAX_FILE_BYTES)
    with writable_log(log_dir) as target:
        summary = append_observations(
            target.path,
            signer,
            batches,
            state_path=Path(state_file) if state_file else None,
            after_append=target.publish,
            lock_timeout=lock_timeout,
            progress=_progress_line,
        )
    _echo_summary(summary, as_json)
    return 0
