"""The log in a bucket: crawl into it, verify from it, publish to it, one writer at a time,
against a real S3 server on loopback (moto's server mode)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from crawl_helpers import LogKey
from storage_helpers import config, objects, run

IMMUTABLE = "public, max-age=31536000, immutable"


def test_crawl_into_a_bucket_and_verify_from_it(
    tmp_path: Path, log_key: LogKey, bucket: str, s3: Any
) -> None:
    url = f"s3://{bucket}/log"
    servers = config(tmp_path, 3)
    crawl = run(
        "log",
        "crawl",
        "--log",
        url,
        "--key",
        str(log_key.path),
        "--servers",
        str(servers),
        "--json",
    )
    assert crawl.exit_code == 0, crawl.output
    assert json.loads(crawl.stdout)["new"] == 3

    stored = objects(s3, bucket, "log/")
    assert "checkpoint" in stored and ".toolpin.lock" not in stored  # the lock is released
    assert stored["checkpoint"]["CacheControl"] == "no-cache"
    blobs = [k for k in stored if k.startswith("blob/sha256/")]
    assert len(blobs) == 3
    for key in blobs:
        assert stored[key]["CacheControl"] == IMMUTABLE
        assert stored[key]["Metadata"]["sha256"] == key.rsplit("/", 1)[1]
    assert stored["tile/0/000.p/3"]["CacheControl"] == "no-cache"

    verify = run("log", "verify", "--log", url, "--vkey", log_key.vkey, "--json")
    assert verify.exit_code == 0, verify.output
    assert json.loads(verify.stdout)["size"] == 3

    # a second crawl that sees nothing new changes nothing in the bucket
    before = {k: v["ETag"] for k, v in stored.items()}
    again = run(
        "log",
        "crawl",
        "--log",
        url,
        "--key",
        str(log_key.path),
        "--servers",
        str(servers),
        "--json",
    )
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["unchanged"] == 3
    assert {k: v["ETag"] for k, v in objects(s3, bucket, "log/").items()} == before
