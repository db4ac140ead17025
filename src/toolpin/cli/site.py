"""``toolpin log site``: build the static site of a verified log.

Light at import: only ``click``; jinja2 and the log engine are imported inside the command.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from toolpin.cli.output_options import json_option
from toolpin.cli.publog_options import log_dir_or_bucket_option, pinned_vkey_option, policy_option


@click.command("site")
@log_dir_or_bucket_option
@pinned_vkey_option
@click.option(
    "--out",
    "out_dir",
    required=True,
    help="The folder to write the site into, or s3://bucket/prefix (built in a local copy, "
    "then only changed objects are sent, the checkpoint last).",
)
@click.option(
    "--base-url",
    default="/",
    show_default=True,
    help="Where the site will be served (links, feeds and the badge snippet use it).",
)
@click.option(
    "--now",
    default=None,
    help="The build's time, ISO 8601 (default: the clock). Same log and --now: same bytes.",
)
@click.option(
    "--state",
    "state_file",
    default=None,
    help="Crawl state file for the last good look of each server "
    "(default: the one `log crawl` keeps, <log name>.crawl-state.sqlite next to the log "
    "directory, when it exists).",
)
@json_option("Print the build summary as JSON.")
@policy_option
def site_cmd(
    log_dir: str,
    vkey: str,
    out_dir: str,
    base_url: str,
    now: str | None,
    state_file: str | None,
    as_json: bool,
    policy_file: str | None,
) -> int:
    """Build the static site (pages, badges, feeds, API, proofs and the log) from a log
    that verifies; refuses one that does not (exit 1)."""
    from toolpin.cli.log import _verifier, load_policy_option
    from toolpin.site.build import build_site, default_cache, parse_now
    from toolpin.storage.publish import site_folder
    from toolpin.storage.workspace import readable_log

    verifier = _verifier(vkey)
    with readable_log(log_dir) as log_path, site_folder(out_dir) as (out_path, publish):
        if state_file is not None:
            state: Path | None = Path(state_file)
        else:
            from toolpin.crawl.runner import existing_state_path

            state = existing_state_path(log_path, verifier.name)
        result = build_site(
            log_path,
            verifier,
            out_path,
            base_url=base_url,
            now=parse_now(now),
            state=state,
            cache=default_cache(log_path),
            policy=load_policy_option(policy_file),
        )
        publish()
    summary = {
        "checkpoint": result.checkpoint_size,
        "servers": result.servers,
        "optedOut": result.opted_out,
        "files": result.files,
        "written": result.written,
        "unchanged": result.unchanged,
        "removed": result.removed,
    }
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        from toolpin.core.render import counted

        click.echo(
            f"built {out_dir} from checkpoint {result.checkpoint_size}: "
            f"{counted(result.servers, 'server')} ({result.opted_out} opted out), "
            f"{counted(result.files, 'file')}, "
            f"{result.written} written, {result.unchanged} unchanged, {result.removed} removed"
        )
    return 0
