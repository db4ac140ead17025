"""``toolpin log publish``: send a log folder that verifies to an S3-compatible bucket.

Light at import: only ``click``; the log engine and boto3 are imported inside the command.
"""

from __future__ import annotations

from pathlib import Path

import click

from toolpin.cli.output_options import json_option
from toolpin.cli.publog_options import pinned_vkey_option


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
