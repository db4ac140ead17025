"""``toolpin log publish``: send a log folder that verifies to an S3-compatible bucket.

Light at import: only ``click``; the log engine and boto3 are imported inside the command.
"""

from __future__ import annotations

from pathlib import Path

import click

from toolpin.cli.output_options import json_option
from toolpin.cli.publog_options import pinned_vkey_option
from toolpin.cli.server_options import public_listen_options


@click.command("publish")
@click.option("--log", "log_dir", required=True, help="The log directory to publish.")
@pinned_vkey_option
@click.option("--to", "dest", required=True, help="The bucket prefix: s3://bucket/prefix.")
@json_option("Print what was sent as JSON.")
def publish_cmd(log_dir: str, vkey: str, dest: str, as_json: bool) -> int:
    """Publish a log folder to s3://bucket/prefix: only if it verifies and extends the
    checkpoint the bucket has; tiles and blobs first, the checkpoint last, unchanged
    objects never sent again (exit 1 when the folder does not verify)."""
    from toolpin.cli.log import _verifier
    from toolpin.storage.publish import publish_log

    result = publish_log(Path(log_dir), _verifier(vkey), dest)
    if as_json:
        import json

        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        click.echo(result.summary_line())
    return 0 if result.ok else 1


@click.command("serve")
@click.option(
    "--dir",
    "where",
    required=True,
    help="What to serve: the folder `log site --out` wrote (or a log folder), or "
    "s3://bucket/prefix.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option(
    "--port",
    default=0,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="The port (0: any free one; the URL is printed).",
)
@public_listen_options
def serve_cmd(where: str, host: str, port: int, public: bool, allow_hosts: tuple[str, ...]) -> int:
    """Serve a published log and site read-only over HTTP until interrupted.

    GET and HEAD only, no directory listings, no links followed; each path gets the
    headers the site's _headers gives it (from a bucket: the object's own Cache-Control
    and Content-Type), an ETag, and 304 for If-None-Match. Loopback unless --public."""
    import sys

    from toolpin.storage.serve import LogServer, open_source

    server = LogServer(open_source(where), host, port, public=public, allowed_hosts=allow_hosts)
    click.echo(f"serving {server.source.name} at {server.url}")
    sys.stdout.flush()
    server.serve_until_interrupted()
    return 0
