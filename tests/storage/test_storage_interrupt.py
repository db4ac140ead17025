"""A writer killed in the middle of an upload leaves the bucket's log valid at its previous
checkpoint; shards hand their observations over through the bucket."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from crawl_helpers import LogKey
from storage_helpers import config, listing, run, subprocess_env

from toolpin.publog.blobs import BlobStore
from toolpin.publog.entries import encode_entry
from toolpin.publog.tiles import TileLog


def test_a_killed_upload_leaves_the_published_log_valid(
    tmp_path: Path, log_key: LogKey, bucket: str, s3: Any
) -> None:
    url = f"s3://{bucket}/log"
    log_dir = tmp_path / "log"
    log = TileLog.open(log_dir)
    blobs = BlobStore(log_dir)
    log.append([encode_entry({"n": 0, "blob": blobs.put(b'{"n": 0}')})], log_key.signer)
    assert (
        run("log", "publish", "--log", str(log_dir), "--vkey", log_key.vkey, "--to", url).exit_code
        == 0
    )
    published = s3.get_object(Bucket=bucket, Key="log/checkpoint")["Body"].read()
    base = len(listing(s3, bucket, "log/"))

    refs = [blobs.put(json.dumps({"n": n, "pad": "x" * 2000}).encode()) for n in range(1, 401)]
    log.append([encode_entry({"n": n, "blob": r}) for n, r in enumerate(refs, 1)], log_key.signer)
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolpin", "log", "publish", "--log", str(log_dir),
         "--vkey", log_key.vkey, "--to", url],
        env=subprocess_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while len(listing(s3, bucket, "log/")) < base + 60 and time.monotonic() < deadline:
            assert proc.poll() is None, "the upload finished before it could be interrupted"
            time.sleep(0.02)
    finally:
        proc.kill()
        proc.wait()
    assert s3.get_object(Bucket=bucket, Key="log/checkpoint")["Body"].read() == published
    assert len(listing(s3, bucket, "log/")) < base + 400  # it was stopped mid-way

    verify = run("log", "verify", "--log", url, "--vkey", log_key.vkey, "--json")
    assert verify.exit_code == 0, verify.output
    assert json.loads(verify.stdout)["size"] == 1

    # the killed writer's lock is still there: the next writer is refused until it expires
    # or is removed by hand (docs/object-storage.md), then the publish completes
    refused = run("log", "publish", "--log", str(log_dir), "--vkey", log_key.vkey, "--to", url)
    assert refused.exit_code == 2 and "another writer holds the lock" in refused.stderr
    s3.delete_object(Bucket=bucket, Key="log/.toolpin.lock")
    done = run(
        "log", "publish", "--log", str(log_dir), "--vkey", log_key.vkey, "--to", url, "--json"
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["unchanged"] > 60  # what the killed run sent is not sent again
    verify = run("log", "verify", "--log", url, "--vkey", log_key.vkey, "--json")
    assert verify.exit_code == 0 and json.loads(verify.stdout)["size"] == 401, verify.output


def test_shards_hand_observations_over_through_the_bucket(
    tmp_path: Path, log_key: LogKey, bucket: str
) -> None:
    servers = config(tmp_path, 5)
    obs, log_url = f"s3://{bucket}/observations/day1", f"s3://{bucket}/log"
    for k in range(1, 5):
        shard = run(
            "log", "crawl", "--servers", str(servers), "--shard", f"{k}/4", "--observations", obs
        )
        assert shard.exit_code == 0, shard.output
    merged = run(
        "log", "append", "--log", log_url, "--key", str(log_key.path), "--from", obs, "--json"
    )
    assert merged.exit_code == 0, merged.output
    assert json.loads(merged.stdout)["appended"] == 5
    verify = run("log", "verify", "--log", log_url, "--vkey", log_key.vkey, "--json")
    assert verify.exit_code == 0 and json.loads(verify.stdout)["size"] == 5, verify.output
