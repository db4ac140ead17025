"""Helpers for the storage tests (imported as ``storage_helpers``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from crawl_helpers import run_toolpin, stub_argv, tool, write_config, write_spec

run = run_toolpin


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


def listing(s3: Any, bucket: str, prefix: str = "") -> dict[str, dict[str, Any]]:
    """Every object under ``prefix``: key (relative) -> its listing (ETag, LastModified)."""
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            out[item["Key"][len(prefix) :]] = item
    return out


def objects(s3: Any, bucket: str, prefix: str = "") -> dict[str, dict[str, Any]]:
    """Every object under ``prefix``: key (relative) -> its HEAD (metadata, headers)."""
    return {
        rel: s3.head_object(Bucket=bucket, Key=prefix + rel) for rel in listing(s3, bucket, prefix)
    }


def subprocess_env() -> dict[str, str]:
    """This environment (the AWS variables included) with the checkout's sources first."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).parents[2] / "src")
    return env
