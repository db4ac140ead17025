"""``toolpin log crawl``: discover servers, probe them safely, append what changed.

Light at import: only ``click`` here; the crawler (``httpx2``, ``rich``, the log engine) is
imported inside the command.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from toolpin.crawl.runner import CrawlEvent, CrawlOptions, CrawlSummary

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
    help="Seconds allowed for each probe.",
)
@click.option(
    "--state",
    "state_file",
    default=None,
    help="Crawl state file (default: crawl-state.sqlite next to the log directory).",
)
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
    state_file: str | None,
    full: bool,
    lock_timeout: float,
) -> int:
    """Crawl MCP servers and log every new or changed surface (prints a JSON summary).

    A server's failure is recorded in crawl state and never stops the crawl. Names in
    OPTOUT.txt (log directory or working directory) are never probed.
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
        state_path=Path(state_file) if state_file else None,
        full=full,
        lock_timeout=lock_timeout,
    )
    summary = _with_progress(options) if sys.stderr.isatty() else crawl(options)
    from toolpin.core.render import safe_json

    click.echo(safe_json(summary.to_json()))
    return 0


def _with_progress(options: CrawlOptions) -> CrawlSummary:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from toolpin.core.render import clip, visible
    from toolpin.crawl.runner import crawl

    console = Console(stderr=True)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("discovering", total=None)

        def on_event(event: CrawlEvent) -> None:
            if event.kind == "source":
                bar.console.print(
                    f"source {event.detail}: {event.total} candidate(s)", markup=False
                )
            elif event.kind == "start":
                bar.update(task, description="probing", total=event.total, completed=0)
            elif event.kind == "done":
                name = clip(visible(event.name or ""), 40)
                bar.update(task, completed=event.done, description=f"{event.status:<7} {name}")
            elif event.kind == "append":
                bar.update(task, description=f"signing {event.total} new entries")

        return crawl(options, on_event)
