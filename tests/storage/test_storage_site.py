"""The site in a bucket: built from a bucket's log, sent with per-object Cache-Control,
unchanged objects never sent again, and verified lookups (`--log s3://`) against it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from crawl_helpers import LogKey, independent_check
from storage_helpers import config, listing, run

NOW = "2026-12-01T00:00:00Z"


@pytest.mark.slow  # the site is ~4,200 objects, all sent once to the loopback server
def test_site_from_a_bucket_to_a_bucket_and_lookups_against_it(
    tmp_path: Path, log_key: LogKey, bucket: str, s3: Any
) -> None:
    log_url, site_url = f"s3://{bucket}/log", f"s3://{bucket}/site"
    servers = config(tmp_path, 3)
    crawl = run(
        "log", "crawl", "--log", log_url, "--key", str(log_key.path), "--servers", str(servers)
    )
    assert crawl.exit_code == 0, crawl.output

    site = run(
        "log", "site", "--log", log_url, "--vkey", log_key.vkey, "--out", site_url, "--now", NOW
    )
    assert site.exit_code == 0, site.output
    listed = listing(s3, bucket, "site/")
    assert {"index.html", "checkpoint", "_headers"} <= set(listed)
    chosen = [k for k in listed if not k.startswith("api/v1/digests/")]
    chosen += sorted(k for k in listed if k.startswith("api/v1/digests/"))[:3]
    stored = {k: s3.head_object(Bucket=bucket, Key=f"site/{k}") for k in chosen}
    assert stored["checkpoint"]["CacheControl"] == "no-cache"
    assert stored["tile/0/000.p/3"]["CacheControl"] == "no-cache"  # a partial tile revalidates
    blobs = [k for k in stored if k.startswith("blob/")]
    assert blobs and all(
        stored[k]["CacheControl"] == "public, max-age=31536000, immutable" for k in blobs
    )
    assert all(v["CacheControl"] == "no-cache" for k, v in stored.items() if k.startswith("api/"))
    assert stored["index.html"]["ContentType"].startswith("text/html")

    # the same log and --now: nothing is sent again
    etags = {k: v["ETag"] for k, v in listed.items()}
    modified = {k: v["LastModified"] for k, v in listed.items()}
    again = run(
        "log", "site", "--log", log_url, "--vkey", log_key.vkey, "--out", site_url, "--now", NOW
    )
    assert again.exit_code == 0, again.output
    after = listing(s3, bucket, "site/")
    assert {k: v["ETag"] for k, v in after.items()} == etags
    assert {k: v["LastModified"] for k, v in after.items()} == modified

    # the bucket's site verifies, and its digest index answers lookups
    verify = run("log", "verify", "--log", site_url, "--vkey", log_key.vkey)
    assert verify.exit_code == 0, verify.output
    from toolpin.storage.url import parse_bucket_url
    from toolpin.storage.workspace import local_copy

    records = independent_check(local_copy(parse_bucket_url(log_url), "mirror"), log_key.vkey)
    digest = records[1]["digests"]["surface"]
    found = run("log", "lookup", digest, "--log", site_url, "--vkey", log_key.vkey, "--json")
    assert found.exit_code == 0, found.output
    answer = json.loads(found.stdout)
    assert answer["entry_index"] == 1 and answer["checkpoint_size"] == 3
    missing = run("log", "lookup", "0" * 64, "--log", site_url, "--vkey", log_key.vkey)
    assert missing.exit_code == 1, missing.output

    # a tampered object in the bucket gives no answer, never a false one
    s3.put_object(Bucket=bucket, Key="site/checkpoint", Body=b"not a checkpoint\n")
    refused = run("log", "lookup", digest, "--log", site_url, "--vkey", log_key.vkey)
    assert refused.exit_code == 2, refused.output
