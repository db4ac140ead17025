"""Helpers for the storage tests (imported as ``storage_helpers``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from crawl_helpers import stub_argv, tool, write_config, write_spec

from toolpin.cli import _register_commands, cli


def run(*args: str) -> Result:
    _register_commands()
    return CliRunner().invoke(cli, list(args))


def config(tmp_path: Path, count: int, *, version: str = "a") -> Path:
    specs = tmp_path / f"specs-{version}"
    specs.mkdir(exist_ok=True)
    servers = {
        f"s{i}": stub_argv(
            write_spec(specs / f"s{i}.json", name=f"s{i}", tools=[tool(f"t{i}", version)])
        )
        for i in range(count)
    }
    return write_config(tmp_path / f"servers-{version}.json", servers)


def objects(s3: Any, bucket: str, prefix: str = "") -> dict[str, dict[str, Any]]:
    """Every object under ``prefix``: key (relative) -> its HEAD."""
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            key = item["Key"]
            out[key[len(prefix) :]] = s3.head_object(Bucket=bucket, Key=key)
    return out
